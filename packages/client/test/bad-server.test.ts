// Bad data and silent servers, from fake servers written with @trivium/wire: every case ends in a
// typed error (never a hang, never an uncaught exception).
import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type Socket } from 'node:net'
import { createClient, NetworkException, type TriviumError } from '@trivium/client/node'
import {
  decodeWsFrame,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import t from 'tap'
import { WebSocketServer, type WebSocket as WsSocket } from 'ws'
import { endpoints } from './fixture.js'

const EMPTY = new Uint8Array(0)

/** A WebSocket server whose behaviour per received frame is given by the test. */
async function fakeWs(onFrame: (ws: WsSocket, frame: Frame) => void) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await once(wss, 'listening')
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => onFrame(ws, decodeWsFrame(new Uint8Array(data))))
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate()
        wss.close(() => resolve())
      }),
  )
  const port = (wss.address() as { port: number }).port
  return `ws://127.0.0.1:${port}/ws`
}

async function fakeTcp(onData: (socket: Socket, frames: Frame[]) => void) {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    const reader = new TcpFrameReader()
    socket.on('data', (chunk) => {
      let frames: Frame[]
      try {
        frames = reader.push(new Uint8Array(chunk))
      } catch {
        return // not frames (a TLS or HTTP handshake): stay silent
      }
      onData(socket, frames)
    })
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  )
  return (server.address() as { port: number }).port
}

t.test(
  'WebSocket: a malformed frame drops the connection; in-flight calls fail, onError reports it',
  async (t) => {
    const url = await fakeWs((ws, frame) => {
      if (frame.type === FrameType.REQUEST) ws.send(new Uint8Array([0x02, 0, 0])) // 3 bytes: shorter than a header
    })
    const c = createClient({ transport: 'websocket', url, endpoints, reconnectAttempts: 0 })
    t.teardown(() => c.close())
    const errors: TriviumError[] = []
    c.onError((e) => errors.push(e))
    const err = await c.call('echo', { text: 'x' }).catch((e) => e)
    t.ok(err instanceof NetworkException)
    t.equal(err.message, 'Connection lost: protocol error')
    t.equal(
      errors[0]?.message,
      'Bad data from the server: Frame of 3 bytes is shorter than its 5-byte header',
    )
    t.equal(c.state, 'idle')
  },
)

t.test('WebSocket: a text message is bad data', async (t) => {
  const url = await fakeWs((ws, frame) => {
    if (frame.type === FrameType.REQUEST) ws.send('hello')
  })
  const c = createClient({ transport: 'websocket', url, endpoints, reconnectAttempts: 0 })
  t.teardown(() => c.close())
  await t.rejects(c.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: 'Connection lost: protocol error',
  })
})

t.test(
  'WebSocket: a response the model cannot decode, an ERROR frame that is not an error body',
  async (t) => {
    const url = await fakeWs((ws, frame) => {
      if (frame.type !== FrameType.REQUEST) return
      const bad = new TextEncoder().encode('not json')
      const type = frame.endpoint === 'echo' ? FrameType.RESPONSE : FrameType.ERROR
      ws.send(encodeWsFrame({ type, requestId: frame.requestId, payload: bad }))
    })
    const c = createClient({ transport: 'websocket', url, endpoints, format: 'json' })
    t.teardown(() => c.close())
    const err = await c.call('echo', { text: 'x' }).catch((e) => e)
    t.ok(err instanceof NetworkException)
    t.match(err.message, /^Bad response from echo: /)
    await t.rejects(c.call('getTask', { id: 1 }), {
      name: 'NetworkException',
      message: 'Bad error frame from the server',
    })
    t.equal(c.state, 'connected', 'a bad payload fails one call, not the connection')
  },
)

t.test('WebSocket: a server that never answers PING is dropped; calls in flight fail', async (t) => {
  const url = await fakeWs(() => {
    // REQUEST and PING are never answered
  })
  const c = createClient({ transport: 'websocket', url, endpoints, pingIntervalMs: 40, reconnectAttempts: 0 })
  t.teardown(() => c.close())
  const disconnected = new Promise<string>((r) => c.onDisconnected(({ reason }) => r(reason)))
  await c.connect()
  const p = c.call('echo', { text: 'never answered' }, { timeoutMs: 0 }).catch((e) => e)
  t.equal(await disconnected, 'no PONG within the ping interval')
  const err = await p
  t.ok(err instanceof NetworkException)
  t.equal(err.message, 'Connection lost: no PONG within the ping interval')
})

t.test('WebSocket: a server PING is answered with a PONG of the same id', async (t) => {
  let resolvePong!: (id: number) => void
  const pong = new Promise<number>((r) => {
    resolvePong = r
  })
  const url = await fakeWs((ws, frame) => {
    if (frame.type === FrameType.REQUEST) {
      ws.send(encodeWsFrame({ type: FrameType.PING, requestId: 4242, payload: EMPTY }))
      ws.send(
        encodeWsFrame({
          type: FrameType.RESPONSE,
          requestId: frame.requestId,
          payload: new TextEncoder().encode('{"text":"a"}'),
        }),
      )
    }
    if (frame.type === FrameType.PONG) resolvePong(frame.requestId)
  })
  const c = createClient({ transport: 'websocket', url, endpoints })
  t.teardown(() => c.close())
  t.same(await c.call('echo', { text: 'a' }), { text: 'a' })
  t.equal(await pong, 4242)
})

t.test('TCP: a frame length over the limit drops the connection with a typed error', async (t) => {
  const port = await fakeTcp((socket, frames) => {
    for (const f of frames) {
      if (f.type === FrameType.REQUEST) socket.write(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 2]))
    }
  })
  const c = createClient({ transport: 'tcp', port, endpoints, reconnectAttempts: 0, maxFrameBytes: 1024 })
  t.teardown(() => c.close())
  const errors: TriviumError[] = []
  c.onError((e) => errors.push(e))
  await t.rejects(c.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: 'Connection lost: protocol error',
  })
  t.equal(
    errors[0]?.message,
    'Bad data from the server: Frame length 4294967295 is over the limit of 1024 bytes',
  )
})

t.test('TCP: frames split across chunks are reassembled; metadata carries token and format', async (t) => {
  let seen: Frame | undefined
  const port = await fakeTcp((socket, frames) => {
    for (const f of frames) {
      if (f.type !== FrameType.REQUEST) continue
      seen = f
      const bytes = encodeTcpFrame({
        type: FrameType.RESPONSE,
        requestId: f.requestId,
        payload: new TextEncoder().encode('{"text":"split"}'),
      })
      // one byte at a time
      for (let i = 0; i < bytes.length; i++) socket.write(bytes.subarray(i, i + 1))
    }
  })
  const c = createClient({ transport: 'tcp', port, endpoints, token: 'tok-1', format: 'json' })
  t.teardown(() => c.close())
  t.same(await c.call('echo', { text: 'x' }), { text: 'split' })
  const { decodeMetadata } = await import('@trivium/wire')
  const { metadata, rest } = decodeMetadata((seen as Frame).payload)
  // echo is a POST: the call carries an idempotency key (a UUID).
  t.match({ ...metadata }, { format: 'json', auth_token: 'tok-1', idempotency_key: /^[0-9a-f-]{36}$/ })
  // The call's deadline travels with it (the client's default timeoutMs, 30 s, minus the time spent).
  const timeout = Number(metadata.timeout_ms)
  t.ok(timeout > 25_000 && timeout <= 30_000, `timeout_ms ${metadata.timeout_ms}`)
  t.same(Object.keys(metadata).sort(), ['auth_token', 'format', 'idempotency_key', 'timeout_ms'])
  t.equal(new TextDecoder().decode(rest), '{"text":"x"}')
})

t.test('connection timeout: a server that accepts but never answers the handshake', async (t) => {
  // TLS to a silent TCP server: the TLS handshake never completes
  const port = await fakeTcp(() => {})
  const c = createClient({ transport: 'tcp', port, endpoints, tls: true, connectTimeoutMs: 50 })
  t.teardown(() => c.close())
  await t.rejects(c.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: `Cannot connect to 127.0.0.1:${port}: timed out after 50 ms`,
  })
  // WebSocket to the same silent server: the upgrade is never answered
  const ws = createClient({
    transport: 'websocket',
    url: `ws://127.0.0.1:${port}/ws`,
    endpoints,
    connectTimeoutMs: 50,
  })
  t.teardown(() => ws.close())
  await t.rejects(ws.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: `Cannot connect to ws://127.0.0.1:${port}/ws: timed out after 50 ms`,
  })
})

t.test('options are validated', async (t) => {
  t.throws(() => createClient({ transport: 'tcp', port: 0, endpoints }), {
    message: '@trivium/client: port must be an integer from 1 to 65535',
  })
  t.throws(() => createClient({ transport: 'websocket', url: 'http://x', endpoints }), {
    message: '@trivium/client: url must be a ws:// or wss:// URL',
  })
  t.throws(() => createClient({ transport: 'websocket', url: 'ws://x', reconnectJitter: 2 }), {
    message: '@trivium/client: reconnectJitter must be a number from 0 to 1',
  })
  t.throws(() => createClient({ transport: 'http', url: 'http://x', poolSize: 0 }), {
    message: '@trivium/client: poolSize must be an integer >= 1',
  })
})

t.test('a response nested deeper than 64 levels is refused, not read (HTTP and WebSocket)', async (t) => {
  // A recursive model's reader recurses with the data: the client bounds it as the server bounds requests.
  const deep = new TextEncoder().encode(`{"text":"x","extra":${'['.repeat(10_000)}${']'.repeat(10_000)}}`)
  const url = await fakeWs((ws, frame) => {
    if (frame.type === FrameType.REQUEST)
      ws.send(encodeWsFrame({ type: FrameType.RESPONSE, requestId: frame.requestId, payload: deep }))
  })
  const ws = createClient({ transport: 'websocket', url, endpoints, format: 'json' })
  t.teardown(() => ws.close())
  await t.rejects(ws.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: 'Bad response from echo: nested deeper than 64 levels',
  })
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(deep)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const port = (server.address() as { port: number }).port
  const http = createClient({ transport: 'http', url: `http://127.0.0.1:${port}`, endpoints, retries: 0 })
  t.teardown(() => http.close())
  await t.rejects(http.call('echo', { text: 'x' }), {
    name: 'NetworkException',
    message: 'Bad response from echo: nested deeper than 64 levels',
  })
})
