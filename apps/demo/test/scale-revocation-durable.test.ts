// Issue 30.1 and 30.3: the database is the revocation list's source of truth; the Redis keys and every
// instance's in-memory mirror are copies rebuilt from it.
//   - a logged-out token stays refused on every instance after its Redis restarts empty or is flushed;
//   - a revocation announced while an instance's Redis subscription was down closes that instance's
//     WebSocket and TCP sessions of the token once it reloads the list.
// A private redis-server (no persistence) that the test restarts, and a proxy it cuts.
import { once } from 'node:events'
import net from 'node:net'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import { Redis } from 'ioredis'
import t from 'tap'
import {
  api,
  backendEnv,
  dropBackend,
  type Instance,
  keysWithTtl,
  login,
  newBackend,
  PgProxy,
  PrivateRedis,
  register,
  startInstances,
  startProcess,
  until,
  WebSocket,
} from './scale-helpers.js'

const REVOKED = 'Token has been revoked'
const decoder = new TextDecoder()
const EMPTY_JSON = Buffer.from('{}')

/** Polls `/auth/me` until the instance answers other than 503; every answer meanwhile is recorded. */
async function meAfterOutage(instance: Instance, token: string, seen: string[]) {
  return until(
    async () => {
      const res = await api(instance.base, 'GET', '/auth/me', { token })
      seen.push(`${res.status}`)
      return res.status === 503 ? undefined : res
    },
    20_000,
    50,
  )
}

t.test('a revoked token stays revoked when Redis loses its data', async (t) => {
  const redis = await PrivateRedis.create()
  t.teardown(() => redis.close())
  const backend = newBackend({ redisUrl: redis.url })
  const instances = await startInstances(t, backend)
  await register(instances[0]!.base, 'durable')
  const { accessToken } = await login(instances[0]!.base, 'durable')
  const { accessToken: valid } = await login(instances[0]!.base, 'durable')
  const out = await api(instances[0]!.base, 'POST', '/auth/logout', { token: accessToken, body: {} })
  t.equal(out.status, 200, 'logged out')
  for (const i of instances) {
    const res = await api(i.base, 'GET', '/auth/me', { token: accessToken })
    t.same([res.status, res.body.message], [401, REVOKED], `revoked on ${i.name}`)
  }
  const listPrefix = `${backend.prefix}blacklist:token:`
  const entries = async () =>
    [...(await keysWithTtl(redis.url, listPrefix)).keys()].filter((k) => k !== listPrefix)
  t.equal((await entries()).length, 1, 'the Redis copy holds the entry')

  await t.test('redis-server restarted without its data', async (t) => {
    await redis.stop()
    await redis.start()
    t.equal((await entries()).length, 0, 'Redis came back empty')
    for (const i of instances) {
      const seen: string[] = []
      const res = await meAfterOutage(i, accessToken, seen)
      t.same(
        [res?.status, res?.body.message],
        [401, REVOKED],
        `still revoked on ${i.name} (seen ${seen.join(',')})`,
      )
      // Until and after its mirror is reloaded (from the database): never accepted.
      for (let n = 0; n < 20; n++) {
        const again = await api(i.base, 'GET', '/auth/me', { token: accessToken })
        if (again.status !== 401 || again.body.message !== REVOKED) {
          t.fail(`${i.name}: the revoked token got ${again.status}`)
          break
        }
        await new Promise((r) => setTimeout(r, 100))
      }
      const ok = await until(
        async () => (await api(i.base, 'GET', '/auth/me', { token: valid })).status === 200,
        10_000,
      )
      t.ok(ok, `a valid token works again on ${i.name}`)
    }
    t.ok(
      await until(async () => (await entries()).length === 1, 10_000),
      'the Redis copy was rebuilt from the database',
    )
  })

  await t.test('FLUSHALL', async (t) => {
    const direct = new Redis(redis.url)
    await direct.flushall()
    direct.disconnect()
    t.ok(await until(async () => (await entries()).length === 1, 10_000), 'the Redis copy was rebuilt again')
    for (const i of instances) {
      const res = await api(i.base, 'GET', '/auth/me', { token: accessToken })
      t.same([res.status, res.body.message], [401, REVOKED], `still revoked on ${i.name}`)
    }
  })
})

t.test(
  'a revocation missed while the subscription was down closes the sessions after the reload',
  async (t) => {
    const redis = await PrivateRedis.create()
    t.teardown(() => redis.close())
    const proxy = await PgProxy.create(new URL(redis.url))
    t.teardown(() => proxy.close())
    const backend = newBackend({ redisUrl: redis.url })
    const [a] = (await startInstances(t, backend, 1)) as [Instance]
    // B reaches Redis through the proxy only.
    const b = await startProcess('B', {
      ...backendEnv(backend),
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
    })
    t.teardown(() => b.stop())
    await register(a.base, 'missed')
    const { accessToken } = await login(a.base, 'missed')
    const { accessToken: other } = await login(a.base, 'missed')

    // A WebSocket and a TCP session of the token on B, both working.
    const ws = new WebSocket(`ws://127.0.0.1:${b.http}/ws?token=${accessToken}&format=json`)
    await once(ws, 'open')
    const wsReplies: number[] = []
    ws.on('message', (data: Buffer) => wsReplies.push(data[0]!))
    const wsClosed = once(ws, 'close')
    let wsIsClosed = false
    ws.on('close', () => {
      wsIsClosed = true
    })
    ws.send(
      encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload: EMPTY_JSON }),
    )
    const socket = net.connect(b.tcp!, '127.0.0.1')
    await once(socket, 'connect')
    const reader = new TcpFrameReader()
    const frames: { type: number; requestId: number; body: string }[] = []
    socket.on('data', (chunk) => {
      for (const f of reader.push(chunk))
        frames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
    })
    const tcpClosed = once(socket, 'close')
    socket.write(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId: 1,
        endpoint: 'auth.me',
        payload: Buffer.concat([encodeMetadata({ auth_token: accessToken, format: 'json' }), EMPTY_JSON]),
      }),
    )
    t.ok(await until(async () => wsReplies.length > 0 && frames.length > 0, 5000), 'both sessions answered')
    t.same([wsReplies[0], frames[0]?.type], [FrameType.RESPONSE, FrameType.RESPONSE], 'both sessions work')

    // B loses Redis: the logout's announcements never reach it.
    proxy.cut()
    t.ok(
      await until(
        async () => (await api(b.base, 'GET', '/auth/me', { token: other })).status === 503,
        10_000,
      ),
      'B fails closed without Redis',
    )
    t.equal((await api(a.base, 'POST', '/auth/logout', { token: accessToken, body: {} })).status, 200)
    t.notOk(wsIsClosed, 'the WebSocket on B is still open while B is cut off')

    proxy.restore()
    const timer = setTimeout(() => {
      ws.terminate()
      socket.destroy()
    }, 15_000)
    const [code, reason] = (await wsClosed) as [number, Buffer]
    await tcpClosed
    clearTimeout(timer)
    t.same([code, reason.toString()], [4001, REVOKED], 'the WebSocket on B is closed after the reload')
    const error = frames.find((f) => f.type === FrameType.ERROR)
    t.equal(error?.requestId, 0, 'the TCP session got ERROR id 0, then was closed')
    t.match(JSON.parse(error?.body ?? '{}'), { statusCode: 401, code: 'TRV_UNAUTHORIZED', message: REVOKED })
    const res = await api(b.base, 'GET', '/auth/me', { token: accessToken })
    t.same([res.status, res.body.message], [401, REVOKED], 'and the token is refused on B')
  },
)

t.test('without Redis, the list is the database table: a restart of the demo keeps it', async (t) => {
  const backend = newBackend()
  const env = {
    DATABASE_URL: backend.databaseUrl,
    DATABASE_SCHEMA: backend.schema,
    REDIS_URL: '',
    REDIS_PREFIX: backend.prefix,
  }
  t.teardown(() => dropBackend(backend))
  const first = await startProcess('A', env)
  t.teardown(() => first.stop())
  await register(first.base, 'restart')
  const { accessToken } = await login(first.base, 'restart')
  t.equal((await api(first.base, 'POST', '/auth/logout', { token: accessToken, body: {} })).status, 200)
  await first.stop()
  const second = await startProcess('A', env)
  t.teardown(() => second.stop())
  const res = await api(second.base, 'GET', '/auth/me', { token: accessToken })
  t.same([res.status, res.body.message], [401, REVOKED], 'still revoked after the restart')
})
