// Issue 44.1–2: every stream ends with its token. A client stream (`tasks.import`) as a connection's
// first call is ended by a logout of its token and by the token's expiry, on TCP direct, TCP inject and
// WebSocket: ERROR id 0 (401) then the close, and an item sent after the logout is never stored; a TCP
// connection whose first call is the logout of its own token is answered, then closed; an HTTP event
// stream ends at its token's expiry with the `error` event (PROTOCOL.md "Frames", "HTTP streaming").
import { once } from 'node:events'
import net from 'node:net'
import {
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import t, { type Test } from 'tap'
import { BACKENDS, backendConfig, registerAndLogin, startDemo } from './helpers.js'
import { openSse, until, WebSocket, type WsClient } from './scale-helpers.js'

type Demo = Awaited<ReturnType<typeof startDemo>>

const REVOKED = {
  statusCode: 401,
  code: 'TRV_UNAUTHORIZED',
  error: 'UnauthorizedException',
  message: 'Token has been revoked',
}
const EXPIRED = {
  statusCode: 401,
  code: 'TRV_TOKEN_EXPIRED',
  error: 'TokenExpiredException',
  message: 'Token has expired',
}
const IMPORT_ID = 1
const decoder = new TextDecoder()
const json = (value: unknown) => Buffer.from(JSON.stringify(value))

// register and login allow 5 calls a minute per client: each test user comes from its own address
let clients = 0
const nextAddress = () => `10.44.${Math.floor(++clients / 250)}.${clients % 250}`

async function newUser(app: Demo['app'], username: string) {
  const { user, tokens } = await registerAndLogin(app, username, undefined, nextAddress())
  return { id: (user as { id: number }).id, token: tokens.accessToken }
}

/** A token's `exp` claim, in ms. */
const expOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000

/** The titles of a user's stored tasks, oldest first. */
async function titles(demo: Demo, ownerId: number): Promise<string[]> {
  const { rows } = await demo.sql.query<{ title: string }>(
    'SELECT title FROM demo_tasks WHERE owner_id = $1 ORDER BY id',
    [ownerId],
  )
  return rows.map((r) => r.title)
}

/** One raw frame connection: the frames it received, whether it closed, and how to send. */
interface Connection {
  name: string
  frames: Frame[]
  closed: Promise<unknown>
  isClosed(): boolean
  /** WebSocket: the close code and reason. */
  closeCode?: () => [number, string] | undefined
  /** Sends a REQUEST (with the token in its metadata on TCP; WebSocket: the upgrade carried it). */
  request(requestId: number, endpoint: string, payload: Uint8Array): void
  send(type: number, requestId: number, payload: Uint8Array): void
  destroy(): void
}

async function openTcp(t: Test, port: number, name: string, token: string): Promise<Connection> {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {}) // writes after the server's close
  await once(socket, 'connect')
  const reader = new TcpFrameReader()
  const frames: Frame[] = []
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk)) frames.push({ ...f, payload: f.payload.slice() })
  })
  let closed = false
  const closedAt = once(socket, 'close').then(() => {
    closed = true
  })
  t.teardown(() => socket.destroy())
  // The server may have closed already: nothing is written after its FIN (that write fails with EPIPE).
  let finished = false
  socket.on('end', () => {
    finished = true
  })
  const write = (frame: Frame) => {
    if (!finished && !socket.destroyed) socket.write(encodeTcpFrame(frame))
  }
  const send = (type: number, requestId: number, payload: Uint8Array) => write({ type, requestId, payload })
  return {
    name,
    frames,
    closed: closedAt,
    isClosed: () => closed,
    request: (requestId, endpoint, payload) => {
      const metadata = encodeMetadata({ auth_token: token, format: 'json' })
      write({ type: FrameType.REQUEST, requestId, endpoint, payload: Buffer.concat([metadata, payload]) })
    },
    send,
    destroy: () => socket.destroy(),
  }
}

async function openWs(t: Test, port: number, token: string): Promise<Connection> {
  const ws: WsClient = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${token}&format=json`)
  ws.on('error', () => {})
  await once(ws, 'open')
  const frames: Frame[] = []
  ws.on('message', (data: Buffer) => {
    frames.push({
      type: data[0]!,
      requestId: data.readUInt32BE(1),
      payload: data.subarray(5),
    } as Frame)
  })
  let code: [number, string] | undefined
  const closed = once(ws, 'close').then(([c, reason]) => {
    code = [c as number, String(reason)]
  })
  t.teardown(() => ws.terminate())
  const send = (type: number, requestId: number, payload: Uint8Array) => {
    if (code === undefined) ws.send(encodeWsFrame({ type, requestId, payload } as Frame))
  }
  return {
    name: 'WebSocket',
    frames,
    closed,
    isClosed: () => code !== undefined,
    closeCode: () => code,
    request: (requestId, endpoint, payload) => {
      if (code === undefined)
        ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId, endpoint, payload }))
    },
    send,
    destroy: () => ws.terminate(),
  }
}

const frameOf = (c: Connection, type: number, requestId: number) =>
  c.frames.find((f) => f.type === type && f.requestId === requestId)
const bodyOf = (f: Frame | undefined) => JSON.parse(decoder.decode(f?.payload ?? json({})))

/**
 * Opens `tasks.import` as the connection's first call and has its first item stored: the handler reads
 * items (the CREDIT came), and the task `first` is in the table.
 */
async function importStarted(t: Test, demo: Demo, c: Connection, ownerId: number): Promise<void> {
  c.request(IMPORT_ID, 'tasks.import', new Uint8Array(0))
  t.ok(
    await until(async () => frameOf(c, FrameType.CREDIT, IMPORT_ID) !== undefined || c.isClosed(), 5000),
    `${c.name}: the import reads items (CREDIT)`,
  )
  c.send(FrameType.CLIENT_ITEM, IMPORT_ID, json({ title: 'first' }))
  t.ok(
    await until(async () => (await titles(demo, ownerId)).includes('first'), 5000),
    `${c.name}: the item sent before is stored`,
  )
}

/** The connection ended as PROTOCOL.md says: ERROR id 0 with `expected`, then the close; no answer to the import. */
async function endedWith(t: Test, c: Connection, expected: object, reason: string): Promise<void> {
  const timer = setTimeout(() => c.destroy(), 60_000)
  await c.closed
  clearTimeout(timer)
  const error = frameOf(c, FrameType.ERROR, 0)
  t.ok(error, `${c.name}: ERROR id 0`)
  t.match(bodyOf(error), expected)
  t.notOk(frameOf(c, FrameType.RESPONSE, IMPORT_ID), `${c.name}: the import got no RESPONSE`)
  t.ok(
    c.frames.indexOf(error as Frame) === c.frames.length - 1,
    `${c.name}: the ERROR id 0 is the last frame before the close`,
  )
  if (c.closeCode) t.same(c.closeCode(), [4001, reason], `${c.name}: close 4001 with the reason`)
}

async function logout(base: string, token: string): Promise<number> {
  const res = await fetch(`${base}/auth/logout`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  })
  await res.arrayBuffer()
  return res.status
}

for (const backend of BACKENDS)
  for (const tcpMode of ['direct', 'inject'] as const)
    t.test(`client streams end with their token (${backend}, TCP ${tcpMode})`, async (t) => {
      const demo = await startDemo(t, { ...backendConfig(backend), tcpMode })
      const { app } = demo
      await app.listen({ port: 0, host: '127.0.0.1' })
      const { port } = app.server.address() as { port: number }
      const base = `http://127.0.0.1:${port}`
      const tcpPort = app.triviumTcp.address()?.port as number
      // The WebSocket does not depend on the TCP mode: tested in one of the two runs.
      const carriers: [string, (t: Test, token: string) => Promise<Connection>][] = [
        [`TCP ${tcpMode}`, (t, token) => openTcp(t, tcpPort, `TCP ${tcpMode}`, token)],
      ]
      if (tcpMode === 'direct') carriers.push(['WebSocket', (t, token) => openWs(t, port, token)])

      for (const [name, open] of carriers) {
        await t.test(
          `${name}: a logout mid-stream ends the import; the item after it is not stored`,
          async (t) => {
            const user = await newUser(app, `out${tcpMode}${name.length}${clients}`)
            const c = await open(t, user.token)
            await importStarted(t, demo, c, user.id)
            t.equal(await logout(base, user.token), 200, 'logged out over HTTP')
            c.send(FrameType.CLIENT_ITEM, IMPORT_ID, json({ title: 'after the logout' }))
            c.send(FrameType.CLIENT_END, IMPORT_ID, new Uint8Array(0))
            await endedWith(t, c, REVOKED, 'Token has been revoked')
            t.same(await titles(demo, user.id), ['first'], 'only the item sent before the logout is stored')
          },
        )

        await t.test(`${name}: the token's expiry mid-stream ends the import`, async (t) => {
          const user = await newUser(app, `exp${tcpMode}${name.length}${clients}`)
          const token = await app.triviumAuth.issueAccessToken(
            { id: user.id, username: 'x', email: 'x@example.com' },
            { ttlSeconds: 5 },
          )
          const exp = expOf(token)
          const c = await open(t, token)
          await importStarted(t, demo, c, user.id)
          t.ok(Date.now() < exp, 'the first item was stored before the expiry')
          await endedWith(t, c, EXPIRED, 'Token has expired')
          t.ok(Date.now() >= exp, 'ended at or after exp')
          c.send(FrameType.CLIENT_ITEM, IMPORT_ID, json({ title: 'after the expiry' }))
          c.send(FrameType.CLIENT_END, IMPORT_ID, new Uint8Array(0))
          t.same(await titles(demo, user.id), ['first'], 'nothing after the expiry is stored')
        })
      }

      await t.test(
        `TCP ${tcpMode}: a connection whose first call is the logout is answered, then closed`,
        async (t) => {
          const user = await newUser(app, `self${tcpMode}${clients}`)
          const c = await openTcp(t, tcpPort, `TCP ${tcpMode}`, user.token)
          c.request(7, 'auth.logout', json({}))
          const timer = setTimeout(() => c.destroy(), 60_000)
          await c.closed
          clearTimeout(timer)
          t.same(
            c.frames.map((f) => [f.type, f.requestId]),
            [
              [FrameType.RESPONSE, 7],
              [FrameType.ERROR, 0],
            ],
            'the logout is answered, then ERROR id 0, then the close',
          )
          t.same(bodyOf(c.frames[0]), { ok: true })
          t.match(bodyOf(c.frames[1]), REVOKED)
        },
      )

      if (tcpMode === 'direct')
        await t.test('HTTP: an event stream ends at its token expiry with the error event', async (t) => {
          const user = await newUser(app, `sse${clients}`)
          const token = await app.triviumAuth.issueAccessToken(
            { id: user.id, username: 'x', email: 'x@example.com' },
            { ttlSeconds: 3 },
          )
          const exp = expOf(token)
          const stream = openSse(base, '/tasks/watch', token)
          t.teardown(() => stream.close())
          t.equal((await stream.response).status, 200)
          t.ok(await until(async () => stream.ended, 30_000), 'the server ended the stream')
          t.ok(Date.now() >= exp, 'at or after exp')
          const last = stream.events.at(-1)
          t.equal(last?.event, 'error', 'the last event is the error event')
          t.match(last?.data, { ...EXPIRED, requestId: String })
          t.notOk(
            stream.events.some((e) => e.event === 'end'),
            'no normal end',
          )
        })
    })
