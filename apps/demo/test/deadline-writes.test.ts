// Issue 44 items 6–9 end to end, over real sockets on HTTP, WebSocket, TCP direct and TCP inject
// (PROTOCOL.md "Deadlines", "Idempotency keys", "Decoding rules"):
// - a write whose deadline passed is answered 504, never 201, and writes nothing — also when the handler
//   never yielded to the event loop (an ~850 KB body on the embedded PGlite: no timer could run);
// - with an idempotency key the retry after that 504 creates the task once, never twice;
// - a registration under a 1 ms deadline is answered 504 and leaves no user (registering again works);
// - the access log and trivium_calls_total record the 504 the client got, not the handler's result;
// - a 10,000-deep JSON body is the documented 400 on every transport, with no error-level log line.
import { once } from 'node:events'
import net from 'node:net'
import { Writable } from 'node:stream'
import {
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  JSON_TOO_DEEP_MESSAGE,
  TcpFrameReader,
} from '@trivium/wire'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { BACKENDS, backendConfig, registerAndLogin, startDemo } from './helpers.js'
import { WebSocket, type WsClient } from './scale-helpers.js'

const METRICS_TOKEN = 'demo-metrics-token-0123456789'
type Transport = 'http' | 'websocket' | 'tcp'

interface Answer {
  /** HTTP status, or the error body's statusCode on frames (RESPONSE: 200). */
  status: number
  body: Record<string, unknown>
}

interface Target {
  name: string
  transport: Transport
  port: number
  tcpPort: number
}

const encoder = new TextEncoder()

/** One call, raw: JSON body, metadata (`timeout_ms`, `idempotency_key`) or the matching HTTP headers. */
async function rawCall(
  target: Target,
  endpoint: string,
  method: string,
  path: string,
  body: string,
  meta: { timeout?: string; key?: string; token?: string },
): Promise<Answer> {
  if (target.transport === 'http') {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (meta.timeout) headers['trivium-timeout-ms'] = meta.timeout
    if (meta.key) headers['idempotency-key'] = meta.key
    if (meta.token) headers.authorization = `Bearer ${meta.token}`
    const res = await fetch(`http://127.0.0.1:${target.port}${path}`, { method, headers, body })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const metadata: Record<string, string> = {}
  if (meta.timeout) metadata.timeout_ms = meta.timeout
  if (meta.key) metadata.idempotency_key = meta.key
  const json = encoder.encode(body)
  const payloadWith = (m: Record<string, string>) => {
    const head = encodeMetadata(m)
    const out = new Uint8Array(head.length + json.length)
    out.set(head)
    out.set(json, head.length)
    return out
  }
  const answer = (f: Frame): Answer => {
    const parsed = JSON.parse(new TextDecoder().decode(f.payload)) as Record<string, unknown>
    if (f.type === FrameType.RESPONSE) return { status: 200, body: parsed }
    return { status: parsed.statusCode as number, body: parsed }
  }
  const frames: Frame[] = []
  const arrived = async () => {
    const end = Date.now() + waitBound(10_000)
    while (frames.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5))
    const first = frames[0]
    if (first === undefined) throw new Error(`no answer from ${endpoint} on ${target.name}`)
    return answer(first)
  }
  if (target.transport === 'tcp') {
    if (meta.token) metadata.auth_token = meta.token
    const socket = net.connect(target.tcpPort, '127.0.0.1')
    socket.on('error', () => {})
    const reader = new TcpFrameReader({ maxFrameBytes: 2 << 20 })
    socket.on('data', (chunk) => frames.push(...reader.push(chunk)))
    await once(socket, 'connect')
    socket.write(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId: 1,
        endpoint,
        payload: payloadWith({ format: 'json', ...metadata }),
      }),
    )
    try {
      return await arrived()
    } finally {
      socket.destroy()
    }
  }
  const ws: WsClient = new WebSocket(`ws://127.0.0.1:${target.port}/ws?format=json&metadata=1`, {
    headers: meta.token ? { authorization: `Bearer ${meta.token}` } : {},
  })
  ws.on('error', () => {})
  ws.on('message', (data: Buffer) => frames.push(decodeWsFrame(new Uint8Array(data))))
  await once(ws, 'open')
  ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint, payload: payloadWith(metadata) }))
  try {
    return await arrived()
  } finally {
    ws.terminate()
  }
}

const timeoutBody = (ms: number) => ({
  statusCode: 504,
  code: 'TRV_TIMEOUT',
  error: 'TimeoutException',
  message: `Deadline of ${ms} ms exceeded`,
})

/** An ~850 KB task: the handler spends well over 1 ms decoding it, in this thread. */
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
      const targets: Target[] = transports.map((transport) => ({
        name: transport === 'tcp' ? `tcp ${mode}` : transport,
        transport,
        port,
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
              target.transport === 'http' ? 201 : 200,
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
          t.equal(retry.status, target.transport === 'http' ? 201 : 200, 'the username was still free')
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
