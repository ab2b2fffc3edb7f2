// Issue 30.6: SIGTERM with a stream open on every transport and an HTTP call in flight on a keep-alive
// connection: every stream gets its shutdown error, the call in flight is answered, a call arriving
// during the drain gets the 503 error body with `Connection: close`, and the process exits 0 in time.
import { once } from 'node:events'
import net from 'node:net'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import t from 'tap'
import {
  api,
  type Instance,
  newBackend,
  openSse,
  registerAndLogin,
  startInstances,
  until,
  WebSocket,
} from './scale-helpers.js'

const decoder = new TextDecoder()
const JSON_EMPTY = Buffer.from('{}')
const SHUTDOWN_BODY = {
  statusCode: 503,
  code: 'TRV_SERVICE_UNAVAILABLE',
  error: 'ServiceUnavailableException',
  message: 'Server is shutting down',
}

interface Frame {
  type: number
  requestId: number
  body: string
}

interface HttpAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/** The HTTP/1.1 responses in `raw` (Content-Length bodies), in order. */
function parseResponses(raw: string): HttpAnswer[] {
  const out: HttpAnswer[] = []
  let rest = raw
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const i = line.indexOf(':')
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    out.push({
      status: Number(statusLine!.split(' ')[1]),
      headers,
      body: rest.slice(end + 4, end + 4 + length),
    })
    rest = rest.slice(end + 4 + length)
  }
  return out
}

t.test('SIGTERM drains every transport and the process exits 0', async (t) => {
  const [instance] = (await startInstances(t, newBackend(), 1)) as [Instance]
  const { base } = instance
  const { accessToken: token } = (await registerAndLogin(base, 'drainer')).tokens

  // An SSE stream, a WebSocket stream and a TCP stream of tasks.watch.
  const sse = openSse(base, '/tasks/watch', token)
  const wsFrames: Frame[] = []
  const ws = new WebSocket(`ws://127.0.0.1:${instance.http}/ws?token=${token}&format=json`)
  ws.on('message', (data: Buffer) =>
    wsFrames.push({
      type: data[0]!,
      requestId: data.readUInt32BE(1),
      body: decoder.decode(data.subarray(5)),
    }),
  )
  const wsClosed = once(ws, 'close')
  await once(ws, 'open')
  ws.send(
    encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'tasks.watch', payload: JSON_EMPTY }),
  )
  const tcp = net.connect(instance.tcp!, '127.0.0.1')
  const tcpFrames: Frame[] = []
  const reader = new TcpFrameReader()
  tcp.on('data', (chunk) => {
    for (const f of reader.push(chunk))
      tcpFrames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
  })
  const tcpClosed = once(tcp, 'close')
  await once(tcp, 'connect')
  tcp.write(
    encodeTcpFrame({
      type: FrameType.REQUEST,
      requestId: 1,
      endpoint: 'tasks.watch',
      payload: Buffer.concat([encodeMetadata({ auth_token: token, format: 'json' }), JSON_EMPTY]),
    }),
  )
  // Every stream is live once a created task reaches all three (a handler subscribes when its stream
  // starts, so a task is created on every poll until each has seen one).
  const live = await until(
    async () => {
      t.equal((await api(base, 'POST', '/tasks', { token, body: { title: 'before' } })).status, 201)
      return (
        sse.events.some((e) => e.event === 'item') &&
        wsFrames.some((f) => f.type === FrameType.STREAM_ITEM) &&
        tcpFrames.some((f) => f.type === FrameType.STREAM_ITEM)
      )
    },
    20_000,
    100,
  )
  t.ok(live, 'the three streams deliver events')

  // An HTTP call in flight on a keep-alive connection: headers read (100 Continue proves it), body not yet.
  const http = net.connect(instance.http, '127.0.0.1')
  let raw = ''
  http.setEncoding('utf8')
  http.on('data', (chunk: string) => {
    raw += chunk
  })
  const httpClosed = once(http, 'close')
  await once(http, 'connect')
  const body = JSON.stringify({ title: 'in flight' })
  http.write(
    `POST /tasks HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n` +
      body.slice(0, 5),
  )
  t.ok(await until(async () => raw.includes('100 Continue'), 10_000), 'the server read the call')

  const sigterm = performance.now()
  const exited = once(instance.proc, 'exit')
  instance.proc.kill('SIGTERM')
  t.ok(
    await until(async () => wsFrames.some((f) => f.type === FrameType.GOAWAY), 10_000),
    'the drain has begun (GOAWAY)',
  )
  // The rest of the call in flight, and a call that arrives during the drain, pipelined behind it.
  http.write(
    `${body.slice(5)}GET /auth/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
  )

  const [code, signal] = (await exited) as [number | null, string | null]
  const drainMs = performance.now() - sigterm
  t.comment(`SIGTERM → exit ${code} in ${drainMs.toFixed(0)} ms`)
  t.equal(code, 0, `exit code 0 (signal ${signal}); output:\n${instance.output().slice(-2000)}`)
  t.equal(signal, null)
  t.ok(drainMs < 10_000, `exits within the grace (3 s; bound 10 s on a loaded machine, force timer 15 s)`)

  await sse.close()
  const last = sse.events.at(-1)
  t.equal(last?.event, 'error', 'the SSE stream ends with an error event')
  t.match(last?.data, SHUTDOWN_BODY)

  const [wsCode, wsReason] = (await wsClosed) as [number, Buffer]
  t.equal(wsCode, 1001)
  t.equal(wsReason.toString(), 'Server is shutting down')
  const wsError = wsFrames.find((f) => f.type === FrameType.ERROR)
  t.equal(wsError?.requestId, 1, 'the WebSocket stream ends with ERROR')
  t.match(JSON.parse(wsError?.body ?? '{}'), SHUTDOWN_BODY)

  await tcpClosed
  t.ok(tcpFrames.some((f) => f.type === FrameType.GOAWAY))
  const tcpError = tcpFrames.find((f) => f.type === FrameType.ERROR)
  t.equal(tcpError?.requestId, 1, 'the TCP stream ends with ERROR')
  t.match(JSON.parse(tcpError?.body ?? '{}'), SHUTDOWN_BODY)

  await httpClosed
  const answers = parseResponses(raw)
  t.same(
    answers.map((a) => a.status),
    [100, 201, 503],
  )
  t.match(JSON.parse(answers[1]?.body ?? '{}'), { title: 'in flight' }, 'the call in flight is answered')
  t.equal(answers[2]?.headers.connection, 'close')
  t.equal(answers[2]?.headers['content-type'], 'application/json; charset=utf-8')
  t.match(
    JSON.parse(answers[2]?.body ?? '{}'),
    SHUTDOWN_BODY,
    'the call during the drain gets the error body',
  )
})
