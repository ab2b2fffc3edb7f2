// Issue 44 items 6–9 end to end, over real sockets on HTTP, WebSocket, TCP direct and TCP inject
// (PROTOCOL.md "Deadlines", "Idempotency keys", "Decoding rules"):
// - a write whose deadline passed is answered 504, never 201, and writes nothing — also when the handler
//   never yielded to the event loop (an ~850 KB body on the embedded PGlite: no timer could run);
// - with an idempotency key the retry after that 504 creates the task once, never twice;
// - a registration under a 1 ms deadline is answered 504 and leaves no user (registering again works);
// - the access log and trivium_calls_total record the 504 the client got, not the handler's result;
// - a 10,000-deep JSON body is the documented 400 on every transport, with no error-level log line.
import { Writable } from 'node:stream'
import { JSON_TOO_DEEP_MESSAGE } from '@trivium/wire'
import t from 'tap'
import { type RawTarget, rawCall } from '../../../packages/conformance/test/raw-call.ts'
import { BACKENDS, backendConfig, registerAndLogin, startDemo } from './helpers.js'

const METRICS_TOKEN = 'demo-metrics-token-0123456789'
type Transport = RawTarget['transport']

const timeoutBody = (ms: number) => ({
  statusCode: 504,
  code: 'TRV_TIMEOUT',
  error: 'TimeoutException',
  message: `Deadline of ${ms} ms exceeded`,
})

/** The issue's ~850 KB task (an unknown field): the call spends well over 1 ms in this thread. */
function bigTask(tag: string): string {
  return JSON.stringify({ title: `late ${tag}`, tags: [tag], padding: 'x'.repeat(850_000) })
}

/** The log lines the demo wrote, parsed. */
function logSink() {
  const lines: Record<string, unknown>[] = []
  let rest = ''
  const stream = new Writable({
    write(chunk, _enc, done) {
      const text = rest + String(chunk)
      const parts = text.split('\n')
      rest = parts.pop() ?? ''
      for (const part of parts) if (part.startsWith('{')) lines.push(JSON.parse(part))
      done()
    },
  })
  return { stream, lines }
}

let unique = 0
const nextTag = (what: string) => `${what}${++unique}x${process.pid}`

for (const backend of BACKENDS) {
  for (const mode of ['direct', 'inject'] as const) {
    t.test(`${backend}, TCP ${mode}`, async (t) => {
      const sink = logSink()
      const { app } = await startDemo(
        t,
        {
          ...backendConfig(backend),
          tcpMode: mode,
          logLevel: 'info',
          rateLimitDefault: false,
          metricsToken: METRICS_TOKEN,
        },
        sink.stream,
      )
      await app.listen({ port: 0, host: '127.0.0.1' })
      const port = (app.server.address() as { port: number }).port
      const tcpPort = app.triviumTcp.address()?.port as number
      const transports: Transport[] = mode === 'direct' ? ['http', 'websocket', 'tcp'] : ['tcp']
      const targets = transports.map((transport) => ({
        name: transport === 'tcp' ? `tcp ${mode}` : transport,
        transport,
        httpUrl: `http://127.0.0.1:${port}`,
        wsUrl: `ws://127.0.0.1:${port}/ws`,
        tcpPort,
      }))
      const { tokens } = await registerAndLogin(app, `late_${mode}_${backend === 'embedded' ? 'e' : 'p'}`)
      const token = tokens.accessToken
      const tasksTagged = async (tag: string) =>
        (
          await app.inject({
            url: `/tasks?tag=${tag}`,
            headers: { authorization: `Bearer ${token}` },
          })
        ).json().items as { id: number }[]

      for (const target of targets) {
        await t.test(`${target.name}: tasks.create under a 1 ms deadline: 504, nothing stored`, async (t) => {
          const tag = nextTag('late')
          for (let i = 0; i < 3; i++) {
            const res = await rawCall(target, 'tasks.create', 'POST', '/tasks', bigTask(tag), {
              timeout: '1',
              token,
            })
            t.equal(res.status, 504, `attempt ${i + 1}: never 201`)
            t.match(res.body, timeoutBody(1))
          }
          t.same(await tasksTagged(tag), [], 'no task was written')
        })

        await t.test(
          `${target.name}: the retry of a 504 with its idempotency key creates one task`,
          async (t) => {
            const tag = nextTag('key')
            const key = `key-${tag}`
            const late = await rawCall(target, 'tasks.create', 'POST', '/tasks', bigTask(tag), {
              timeout: '1',
              key,
              token,
            })
            t.equal(late.status, 504)
            const first = await rawCall(target, 'tasks.create', 'POST', '/tasks', bigTask(tag), {
              key,
              token,
            })
            t.equal(
              first.status,
              target.transport === 'http' ? 201 : 'ok',
              'the retry runs (nothing was written)',
            )
            const again = await rawCall(target, 'tasks.create', 'POST', '/tasks', bigTask(tag), {
              key,
              token,
            })
            t.same(again.body, first.body, 'a second retry: the same answer')
            t.same(
              (await tasksTagged(tag)).map((task) => task.id),
              [first.body.id],
              'one task, never a duplicate',
            )
          },
        )

        await t.test(`${target.name}: auth.register under a 1 ms deadline: 504, no user`, async (t) => {
          const username = nextTag('reg')
          const body = JSON.stringify({
            username,
            email: `${username}@example.com`,
            password: 'Str0ng!Passw0rd',
          })
          const res = await rawCall(target, 'auth.register', 'POST', '/auth/register', body, { timeout: '1' })
          t.equal(res.status, 504)
          t.match(res.body, timeoutBody(1))
          const retry = await rawCall(target, 'auth.register', 'POST', '/auth/register', body, {})
          t.equal(retry.status, target.transport === 'http' ? 201 : 'ok', 'the username was still free')
          t.match(retry.body, { username })
        })

        await t.test(`${target.name}: a 10,000-deep JSON body is the documented 400`, async (t) => {
          const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`
          const body = `{"username":"nobody","password":"whatever1","extra":${deep}}`
          const res = await rawCall(target, 'auth.login', 'POST', '/auth/login', body, {})
          t.equal(res.status, 400)
          t.same(res.body, {
            statusCode: 400,
            code: 'TRV_VALIDATION',
            error: 'ValidationException',
            message: JSON_TOO_DEEP_MESSAGE,
            requestId: res.body.requestId,
          })
          // Exactly the limit (64 levels, the outermost object counted) is accepted: the login runs.
          const limit = `${'['.repeat(62)}${']'.repeat(62)}`
          const atLimit = await rawCall(
            target,
            'auth.login',
            'POST',
            '/auth/login',
            `{"username":"nobody","password":"whatever1","extra":[${limit}]}`,
            {},
          )
          t.match(atLimit.body, { statusCode: 401, code: 'TRV_UNAUTHORIZED' }, '64 levels: the login ran')
        })
      }

      await t.test('the access log and /metrics record the 504s the clients got', async (t) => {
        const created = (transport: Transport) =>
          sink.lines.filter(
            (l) => l.msg === 'call' && l.endpoint === 'tasks.create' && l.transport === transport,
          )
        for (const transport of transports) {
          const lines = created(transport)
          // 3 late creates + 1 late keyed create: 504; the keyed retries: 201.
          t.same(
            lines.filter((l) => l.status === 504).map((l) => l.code),
            ['TRV_TIMEOUT', 'TRV_TIMEOUT', 'TRV_TIMEOUT', 'TRV_TIMEOUT'],
            `${transport}: four 504 lines`,
          )
          t.equal(lines.filter((l) => l.code === 'OK').length, 2, `${transport}: the two keyed retries`)
        }
        const metrics = await app.inject({
          url: '/metrics',
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        })
        for (const transport of transports) {
          t.match(
            metrics.body,
            new RegExp(
              `\\ntrivium_calls_total\\{endpoint="tasks\\.create",transport="${transport}",code="TRV_TIMEOUT"\\} 4\\n`,
            ),
            `${transport}: trivium_calls_total counts the four 504s`,
          )
          t.match(
            metrics.body,
            new RegExp(
              `\\ntrivium_calls_total\\{endpoint="tasks\\.create",transport="${transport}",code="OK"\\} 2\\n`,
            ),
            `${transport}: and only the two answered creates as OK`,
          )
        }
        const errors = sink.lines.filter((l) => typeof l.level === 'number' && l.level >= 50)
        t.same(errors, [], 'no error-level log line: bad input is the client’s, not the server’s')
      })
    })
  }
}
