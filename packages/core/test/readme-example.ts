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

/** One curl line of the README and what it prints after it. */
export interface Exchange {
  command: string
  status: number | undefined
  headers: Record<string, string>
  body: unknown
}

export function exchanges(shell: string): Exchange[] {
  const out: Exchange[] = []
  for (const line of shell.split('\n')) {
    if (line.startsWith('curl ')) out.push({ command: line, status: undefined, headers: {}, body: undefined })
    const current = out.at(-1)
    if (current === undefined || line.startsWith('curl ') || line === '') continue
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(line)
    const header = /^([a-z-]+): (.*)$/.exec(line)
    if (status) current.status = Number(status[1])
    else if (header) current.headers[header[1] as string] = header[2] as string
    else current.body = JSON.parse(line)
  }
  return out
}

/** What curl sends for a README line: `-XPOST`, `-H 'name: value'`, `-d '<body>'` and the path. */
export function request(command: string): { path: string; init: RequestInit } {
  const method = /-X(\w+)/.exec(command)?.[1] ?? 'GET'
  const headers = Object.fromEntries(
    [...command.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1] as string, m[2] as string]),
  )
  const body = /-d '([^']*)'/.exec(command)?.[1]
  const path = /localhost:3000(\/\S*)/.exec(command)?.[1] ?? '/'
  return { path, init: { method, headers, ...(body === undefined ? {} : { body }) } }
}

/**
 * Sends each curl line and checks the answer the README prints after it: the status (printed, or the error
 * body's `statusCode`, else any 2xx), the headers shown and the body (`omit`: fields that vary, left out).
 */
export async function answersAsPrinted(
  t: Test,
  port: number,
  steps: Exchange[],
  omit: string[] = [],
): Promise<void> {
  for (const step of steps) {
    const { path, init } = request(step.command)
    const res = await fetch(`http://127.0.0.1:${port}${path}`, init)
    const body = (await res.json()) as Record<string, unknown>
    for (const field of omit) delete body[field]
    const expected = step.status ?? (step.body as { statusCode?: number }).statusCode
    if (expected === undefined) t.ok(res.ok, `${step.command}: 2xx`)
    else t.equal(res.status, expected, `${step.command}: status`)
    for (const [name, value] of Object.entries(step.headers))
      t.equal(res.headers.get(name), value, `${step.command}: ${name}`)
    t.same(body, step.body, `${step.command}: body`)
  }
}
