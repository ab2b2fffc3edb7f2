// Runs a README's TypeScript example as written (its `app.listen({ port: 3000 })` moved to a random port)
// and hands back the running app and the section's shell block, whose lines the tests check.
import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { importSnippet } from '../../../scripts/test/import-snippet.js'

export async function startReadmeExample(
  t: Test,
  readmeUrl: URL,
  heading: string,
): Promise<{ app: FastifyInstance; port: number; shell: string }> {
  const readme = readFileSync(readmeUrl, 'utf8')
  const section = readme.slice(readme.indexOf(heading))
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const shell = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  t.match(code, /app\.listen\(\{ port: 3000 \}\)/)
  const runnable = `${code.replace('app.listen({ port: 3000 })', "app.listen({ port: 0, host: '127.0.0.1' })")}\nexport { app }\n`
  // Imported from inside this package, so that `fastify` and `@trivium/core` resolve as they do for users.
  const { app } = await importSnippet<{ app: FastifyInstance }>(t, runnable, new URL('.', import.meta.url))
  t.teardown(() => app.close())
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, port, shell }
}
