// Runs the README's idempotency example as written (on a random port; issue 40 item 11: it used to need
// @trivium/auth) and sends its curl lines, checking each answer the README prints: status, the headers shown, body.
import t from 'tap'
import { startReadmeExample } from './readme-example.ts'

/** One curl line of the README and what it prints after it. */
interface Exchange {
  command: string
  status: number | undefined
  headers: Record<string, string>
  body: unknown
}

function exchanges(shell: string): Exchange[] {
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
function request(command: string): { path: string; init: RequestInit } {
  const method = /-X(\w+)/.exec(command)?.[1] ?? 'GET'
  const headers = Object.fromEntries(
    [...command.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1] as string, m[2] as string]),
  )
  const body = /-d '([^']*)'/.exec(command)?.[1]
  const path = /localhost:3000(\/\S*)/.exec(command)?.[1] ?? '/'
  return { path, init: { method, headers, ...(body === undefined ? {} : { body }) } }
}

t.test('the README idempotency example answers its curl lines as printed', async (t) => {
  const { port, shell } = await startReadmeExample(
    t,
    'packages/core/README.md',
    'packages/core/test/readme-idempotency.test.ts',
  )
  const steps = exchanges(shell)
  t.equal(steps.length, 3, 'a first call, its replay, the same key with another body')
  for (const step of steps) {
    const { path, init } = request(step.command)
    const res = await fetch(`http://127.0.0.1:${port}${path}`, init)
    const body = await res.json()
    const expectedStatus = step.status ?? (step.body as { statusCode?: number }).statusCode
    t.equal(res.status, expectedStatus, `${step.command}: status`)
    for (const [name, value] of Object.entries(step.headers))
      t.equal(res.headers.get(name), value, `${step.command}: ${name}`)
    t.same(body, step.body, `${step.command}: body`)
  }
  t.equal(steps[0]?.headers['idempotent-replayed'], undefined, 'the first answer is not a replay')
  const first = await fetch(`http://127.0.0.1:${port}/orders`, request(steps[0]?.command ?? '').init)
  t.equal(first.headers.get('idempotent-replayed'), 'true', 'every later retry of the first body is')
})
