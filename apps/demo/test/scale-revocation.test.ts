// Issue 11: a logout on instance A makes the token fail on instance B at once, and closes the token's
// WebSocket and TCP sessions on B (Redis revocation list + a revocation announcement over pub/sub).
import { once } from 'node:events'
import net from 'node:net'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import t from 'tap'
import {
  api,
  type Instance,
  keysWithTtl,
  login,
  newBackend,
  percentile,
  register,
  startInstances,
  WebSocket,
} from './scale-helpers.js'

const REVOKED = 'Token has been revoked'
const decoder = new TextDecoder()
const EMPTY_JSON = Buffer.from('{}')

t.test('revocation across two instances', async (t) => {
  const backend = newBackend()
  const [a, b] = (await startInstances(t, backend)) as [Instance, Instance]
  await register(a.base, 'rev')

  await t.test('a token logged out on A fails on B at once (20 trials)', async (t) => {
    const delays: number[] = []
    const attemptsBeforeRevoked: number[] = []
    for (let i = 0; i < 20; i++) {
      const { accessToken } = await login(a.base, 'rev')
      const before = await api(b.base, 'GET', '/auth/me', { token: accessToken })
      t.equal(before.status, 200, `trial ${i}: the token works on B`)
      const out = await api(a.base, 'POST', '/auth/logout', { token: accessToken, body: {} })
      const loggedOut = performance.now()
      t.same(out.body, { ok: true })
      let attempts = 0
      for (;;) {
        attempts++
        const after = await api(b.base, 'GET', '/auth/me', { token: accessToken })
        if (after.status === 401 && after.body.message === REVOKED) break
        if (attempts === 50) {
          t.fail(`trial ${i}: token still accepted on B: ${after.status}`)
          break
        }
      }
      delays.push(performance.now() - loggedOut)
      attemptsBeforeRevoked.push(attempts)
    }
    const p50 = percentile(delays, 50)
    const p99 = percentile(delays, 99)
    t.comment(`logout on A → first "${REVOKED}" on B: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`)
    t.same(new Set(attemptsBeforeRevoked), new Set([1]), 'the very first request on B after logout fails')
    t.ok(p99 <= 3000, `p99 ${p99.toFixed(1)} ms (target 100 ms; generous bound 3 s on a machine at load 15)`)

    const listPrefix = `${backend.prefix}blacklist:token:`
    const keys = await keysWithTtl(backend.redisUrl, listPrefix)
    t.ok((keys.get(listPrefix) ?? 0) > 0, 'the marker of the copy (key <prefix>, the run id) expires too')
    keys.delete(listPrefix)
    t.equal(keys.size, 20, 'one revocation entry per logged-out token')
    for (const [key, ttl] of keys) t.ok(ttl > 0 && ttl <= 3600_000, `${key} expires with the token`)
  })

  await t.test('an open WebSocket session of the token on B is closed with 4001', async (t) => {
    const { accessToken } = await login(a.base, 'rev')
    const ws = new WebSocket(`ws://127.0.0.1:${b.http}/ws?token=${accessToken}&format=json`)
    await once(ws, 'open')
    const replies: { type: number; body: string }[] = []
    ws.on('message', (data: Buffer) =>
      replies.push({ type: data[0]!, body: decoder.decode(data.subarray(5)) }),
    )
    ws.send(
      encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload: EMPTY_JSON }),
    )
    const closed = once(ws, 'close')
    for (let i = 0; i < 100 && replies.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    t.equal(replies[0]?.type, FrameType.RESPONSE, `the session works: ${replies[0]?.body}`)
    t.match(JSON.parse(replies[0]!.body), { username: 'rev' })

    const out = await api(a.base, 'POST', '/auth/logout', { token: accessToken, body: {} })
    const loggedOut = performance.now()
    t.equal(out.status, 200)
    const timer = setTimeout(() => ws.terminate(), 10_000)
    const [code, reason] = (await closed) as [number, Buffer]
    clearTimeout(timer)
    const ms = performance.now() - loggedOut
    t.comment(`WebSocket on B closed ${ms.toFixed(1)} ms after the logout response on A`)
    t.equal(code, 4001)
    t.equal(reason.toString(), REVOKED)
    t.ok(ms < 3000, `within 3 s (at once; the bound holds on a machine at load 15): ${ms.toFixed(0)} ms`)
  })

  await t.test('an open TCP session of the token on B gets ERROR id 0, then is closed', async (t) => {
    const { accessToken } = await login(a.base, 'rev')
    const socket = net.connect(b.tcp!, '127.0.0.1')
    await once(socket, 'connect')
    const reader = new TcpFrameReader()
    const frames: { type: number; requestId: number; body: string }[] = []
    socket.on('data', (chunk) => {
      for (const f of reader.push(chunk))
        frames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
    })
    const closed = once(socket, 'close')
    socket.write(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId: 1,
        endpoint: 'auth.me',
        payload: Buffer.concat([encodeMetadata({ auth_token: accessToken, format: 'json' }), EMPTY_JSON]),
      }),
    )
    for (let i = 0; i < 100 && frames.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    t.equal(frames[0]?.type, FrameType.RESPONSE, `the session works: ${frames[0]?.body}`)

    const out = await api(a.base, 'POST', '/auth/logout', { token: accessToken, body: {} })
    const loggedOut = performance.now()
    t.equal(out.status, 200)
    const timer = setTimeout(() => socket.destroy(), 10_000)
    await closed
    clearTimeout(timer)
    const ms = performance.now() - loggedOut
    t.comment(`TCP session on B closed ${ms.toFixed(1)} ms after the logout response on A`)
    const error = frames.find((f) => f.type === FrameType.ERROR)
    t.equal(error?.requestId, 0)
    t.match(JSON.parse(error?.body ?? '{}'), {
      statusCode: 401,
      code: 'TRV_UNAUTHORIZED',
      error: 'UnauthorizedException',
      message: REVOKED,
    })
    t.ok(ms < 3000, `within 3 s (at once; the bound holds on a machine at load 15): ${ms.toFixed(0)} ms`)
  })
})
