// Runs a README's TypeScript example as written (its `app.listen({ port: 3000 })` moved to a random port)
// and hands back the running app and the shell block after it, whose lines the tests check. The example is the
// block marked `<!-- tested: <testFile> -->` (scripts/test/readme-blocks.ts).
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { importSnippet } from '../../../scripts/test/import-snippet.js'
import { testedSection } from '../../../scripts/test/readme-blocks.js'

export async function startReadmeExample(
  t: Test,
  readme: string,
  testFile: string,
): Promise<{ app: FastifyInstance; port: number; shell: string }> {
  const blocks = testedSection(readme, testFile)
  const code = blocks[0]?.lang === 'ts' ? blocks[0].code : ''
  const shell = blocks.find((b) => b.lang === 'sh')?.code ?? ''
  t.match(code, /app\.listen\(\{ port: 3000 \}\)/)
  const runnable = `${code.replace('app.listen({ port: 3000 })', "app.listen({ port: 0, host: '127.0.0.1' })")}\nexport { app }\n`
  // Imported from inside this package, so that `fastify` and `@trivium/core` resolve as they do for users.
  const { app } = await importSnippet<{ app: FastifyInstance }>(t, runnable, new URL('.', import.meta.url))
  t.teardown(() => app.close())
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, port, shell }
}
