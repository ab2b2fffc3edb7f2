// Issue 30.7: `auth.logout` over a WebSocket or TCP session of the token it revokes is answered
// (RESPONSE) before the revocation closes that session (ERROR id 0, WebSocket close 4001, TCP FIN):
// "A unary call is answered by exactly one RESPONSE or ERROR." One instance (in-process revocation
// notice) in both TCP modes, and two instances whose notice travels over Redis.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import net from 'node:net'
import { createClient } from '@trivium/client/node'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import t, { type Test } from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import { POSTGRES_URL, startDemo } from './helpers.js'
import {
  api,
  backendEnv,
  dropBackend,
  type Instance,
  login,
  newBackend,
  register,
  startProcess,
  until,
  WebSocket,
} from './scale-helpers.js'

const ROUNDS = 10
const REVOKED = {
  statusCode: 401,
  code: 'TRV_UNAUTHORIZED',
  error: 'UnauthorizedException',
  message: 'Token has been revoked',
}
const decoder = new TextDecoder()
const JSON_EMPTY = Buffer.from('{}')

interface Frame {
  type: number
  requestId: number
  body: string
}

/** Logs out over a WebSocket session of the token; the frames received and the close code. */
async function logoutOverWebSocket(httpPort: number, token: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${httpPort}/ws?token=${token}&format=json`)
  const frames: Frame[] = []
  ws.on('message', (data: Buffer) =>
    frames.push({ type: data[0]!, requestId: data.readUInt32BE(1), body: decoder.decode(data.subarray(5)) }),
  )
  const closed = once(ws, 'close')
  await once(ws, 'open')
  ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload: JSON_EMPTY }))
  await until(async () => frames.length > 0, 10_000)
  ws.send(
    encodeWsFrame({ type: FrameType.REQUEST, requestId: 2, endpoint: 'auth.logout', payload: JSON_EMPTY }),
  )
  const timer = setTimeout(() => ws.terminate(), 10_000)
  const [code] = (await closed) as [number]
  clearTimeout(timer)
  return { frames, closed: code }
}

/** Logs out over a TCP session of the token (the token in the frame's metadata). */
async function logoutOverTcp(tcpPort: number, token: string) {
  const socket = net.connect(tcpPort, '127.0.0.1')
  const frames: Frame[] = []
  const reader = new TcpFrameReader()
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk))
      frames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
  })
  const closed = once(socket, 'close')
  await once(socket, 'connect')
  const payload = Buffer.concat([encodeMetadata({ auth_token: token, format: 'json' }), JSON_EMPTY])
  // A TCP connection learns its identity from its calls: one call first, as a client makes.
  socket.write(encodeTcpFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload }))
  await until(async () => frames.length > 0, 10_000)
  socket.write(encodeTcpFrame({ type: FrameType.REQUEST, requestId: 2, endpoint: 'auth.logout', payload }))
  const timer = setTimeout(() => socket.destroy(), 10_000)
  await closed
  clearTimeout(timer)
  return { frames, closed: 'FIN' }
}

/**
 * `ROUNDS` logouts over each transport, each on a session that made a call first (auth.me): the
 * logout's RESPONSE, then ERROR id 0, then the close, every time.
 */
async function checkRounds(
  t: Test,
  target: { base: string; http: number; tcp: number; label: string },
  username: string,
) {
  for (const [transport, logout, closeCode] of [
    ['websocket', logoutOverWebSocket, 4001],
    ['tcp', logoutOverTcp, 'FIN'],
  ] as const) {
    const seen: string[] = []
    // A login per session (each logout revokes its token); refreshed, which costs no password hash.
    let { refreshToken } = await login(target.base, username)
    for (let round = 0; round < ROUNDS; round++) {
      const refreshed = await api(target.base, 'POST', '/auth/refresh', { body: { refreshToken } })
      if (refreshed.status !== 200) throw new Error(`refresh failed: ${JSON.stringify(refreshed.body)}`)
      const { accessToken } = refreshed.body as { accessToken: string }
      refreshToken = refreshed.body.refreshToken
      const { frames, closed } = await logout(transport === 'tcp' ? target.tcp : target.http, accessToken)
      seen.push(
        `${frames.map((f) => `${f.type === FrameType.RESPONSE ? 'RESPONSE' : f.type === FrameType.ERROR ? 'ERROR' : f.type} ${f.requestId}`).join(', ')}, close ${closed}`,
      )
      const [me, answer, error] = frames
      const ok =
        frames.length === 3 &&
        me?.type === FrameType.RESPONSE &&
        me.requestId === 1 &&
        answer?.type === FrameType.RESPONSE &&
        answer.requestId === 2 &&
        answer.body === '{"ok":true}' &&
        error?.type === FrameType.ERROR &&
        error.requestId === 0 &&
        JSON.parse(error.body).message === REVOKED.message &&
        closed === closeCode
      if (!ok) {
        t.fail(`${target.label} ${transport} round ${round}: ${seen.at(-1)} (${frames.map((f) => f.body)})`)
        return
      }
      t.match(JSON.parse(error.body), REVOKED)
    }
    t.same(
      new Set(seen),
      new Set([`RESPONSE 1, RESPONSE 2, ERROR 0, close ${closeCode}`]),
      `${target.label} ${transport}`,
    )
  }
}

for (const tcpMode of ['direct', 'inject'] as const) {
  t.test(`one instance, TCP ${tcpMode}: logout over its own session is answered, then closed`, async (t) => {
    const demo = await startDemo(t, {
      databaseUrl: POSTGRES_URL,
      databaseSchema: `test_demo_${randomBytes(6).toString('hex')}`,
      tcpMode,
      rateLimitDefault: false,
    })
    await demo.app.listen({ port: 0, host: '127.0.0.1' })
    const http = (demo.app.server.address() as net.AddressInfo).port
    const target = {
      base: `http://127.0.0.1:${http}`,
      http,
      tcp: demo.app.triviumTcp.address()?.port as number,
      label: `one instance (${tcpMode})`,
    }
    await register(target.base, 'leaver')
    await checkRounds(t, target, 'leaver')

    // What the issue saw from @trivium/client: auth.logout rejected with NetworkException.
    for (const transport of ['websocket', 'tcp'] as const) {
      const { accessToken: token } = await login(target.base, 'leaver')
      const client =
        transport === 'websocket'
          ? createClient({ transport, url: `ws://127.0.0.1:${http}/ws`, endpoints, token, format: 'json' })
          : createClient({ transport, host: '127.0.0.1', port: target.tcp, endpoints, token, format: 'json' })
      t.teardown(() => client.close())
      t.match(await client.call('auth.me', {}), { username: 'leaver' })
      t.same(await client.call('auth.logout', {}), { ok: true }, `@trivium/client over ${transport}`)
    }
  })
}

t.test('two instances on Redis: logout over its own session is answered, then closed', async (t) => {
  const backend = newBackend()
  const started = await Promise.allSettled([
    startProcess('A', { ...backendEnv(backend), TCP_MODE: 'direct' }),
    startProcess('B', { ...backendEnv(backend), TCP_MODE: 'inject' }),
  ])
  const instances = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
  t.teardown(async () => {
    await Promise.all(instances.map((i) => i.stop()))
    await dropBackend(backend)
  })
  for (const s of started) if (s.status === 'rejected') throw s.reason
  const [a, b] = instances as [Instance, Instance]
  await register(a.base, 'leaver')
  for (const instance of [a, b]) {
    await checkRounds(
      t,
      { base: instance.base, http: instance.http, tcp: instance.tcp!, label: `instance ${instance.name}` },
      'leaver',
    )
  }
})
