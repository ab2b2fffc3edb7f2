// Issue 30.1 and 30.3: the database is the revocation list's source of truth; the Redis keys and every
// instance's in-memory mirror are copies rebuilt from it.
//   - a logged-out token stays refused on every instance after its Redis restarts empty or is flushed;
//   - a revocation announced while an instance's Redis subscription was down closes that instance's
//     WebSocket and TCP sessions of the token once it reloads the list;
//   - (issue 44.2) so does a lookup of the token that reached the database while the copy is distrusted.
// A private redis-server (no persistence) that the test restarts, and a proxy it cuts or holds.
import { once } from 'node:events'
import net from 'node:net'
import { encodeMetadata, encodeTcpFrame, encodeWsFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
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

/** A and B on one backend; B reaches Redis through a proxy only. Two logins of one new user. */
async function proxiedInstances(t: Test, username: string) {
  const redis = await PrivateRedis.create()
  t.teardown(() => redis.close())
  const proxy = await PgProxy.create(new URL(redis.url))
  t.teardown(() => proxy.close())
  const backend = newBackend({ redisUrl: redis.url })
  const [a] = (await startInstances(t, backend, 1)) as [Instance]
  const b = await startProcess('B', {
    ...backendEnv(backend),
    REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
  })
  t.teardown(() => b.stop())
  await register(a.base, username)
  const { accessToken } = await login(a.base, username)
  const { accessToken: other } = await login(a.base, username)
  return { proxy, a, b, accessToken, other }
}

/** A WebSocket and a TCP session of `token` on `instance`, both working (their first call answered). */
async function openSessions(t: Test, instance: Instance, token: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${instance.http}/ws?token=${token}&format=json`)
  await once(ws, 'open')
  const wsReplies: number[] = []
  ws.on('message', (data: Buffer) => wsReplies.push(data[0]!))
  let wsClose: [number, string] | undefined
  ws.on('close', (code: number, reason: Buffer) => {
    wsClose = [code, reason.toString()]
  })
  ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'auth.me', payload: EMPTY_JSON }))
  const socket = net.connect(instance.tcp!, '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  const reader = new TcpFrameReader()
  const frames: { type: number; requestId: number; body: string }[] = []
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk))
      frames.push({ type: f.type, requestId: f.requestId, body: decoder.decode(f.payload) })
  })
  let tcpIsClosed = false
  socket.on('close', () => {
    tcpIsClosed = true
  })
  socket.write(
    encodeTcpFrame({
      type: FrameType.REQUEST,
      requestId: 1,
      endpoint: 'auth.me',
      payload: Buffer.concat([encodeMetadata({ auth_token: token, format: 'json' }), EMPTY_JSON]),
    }),
  )
  t.teardown(() => {
    ws.terminate()
    socket.destroy()
  })
  t.ok(await until(async () => wsReplies.length > 0 && frames.length > 0, 5000), 'both sessions answered')
  t.same([wsReplies[0], frames[0]?.type], [FrameType.RESPONSE, FrameType.RESPONSE], 'both sessions work')
  return {
    frames,
    /** Both closed (or the bound passed: the caller's assertions then fail). */
    closed: () => until(async () => wsClose !== undefined && tcpIsClosed, 15_000),
    wsClose: () => wsClose,
    isOpen: () => wsClose === undefined && !tcpIsClosed,
  }
}

/** Both sessions ended as a revocation ends them: close 4001 on the WebSocket, ERROR id 0 then FIN on TCP. */
function endedRevoked(t: Test, sessions: Awaited<ReturnType<typeof openSessions>>, where: string) {
  t.same(sessions.wsClose(), [4001, REVOKED], `the WebSocket on B is closed ${where}`)
  const error = sessions.frames.find((f) => f.type === FrameType.ERROR)
  t.equal(error?.requestId, 0, 'the TCP session got ERROR id 0, then was closed')
  t.match(JSON.parse(error?.body ?? '{}'), { statusCode: 401, code: 'TRV_UNAUTHORIZED', message: REVOKED })
}

t.test(
  'a revocation missed while the subscription was down closes the sessions after the reload',
  async (t) => {
    const { proxy, a, b, accessToken, other } = await proxiedInstances(t, 'missed')
    const sessions = await openSessions(t, b, accessToken)

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
    t.ok(sessions.isOpen(), 'the sessions on B are still open while B is cut off')

    proxy.restore()
    await sessions.closed()
    endedRevoked(t, sessions, 'after the reload')
    const res = await api(b.base, 'GET', '/auth/me', { token: accessToken })
    t.same([res.status, res.body.message], [401, REVOKED], 'and the token is refused on B')
  },
)

// Issue 44.2: an instance that learns of a revocation from a lookup closes that token's sessions, as on
// the announcement. B's Redis bytes are held with its connections open (no reset): its copy of the list
// is distrusted once its heartbeats stop coming back, and its lookups ask the database.
t.test('a lookup that finds the token revoked in the database closes its sessions', async (t) => {
  const { proxy, a, b, accessToken, other } = await proxiedInstances(t, 'held')
  const sessions = await openSessions(t, b, accessToken)
  const bystander = await openSessions(t, b, other)

  proxy.hold()
  t.equal((await api(a.base, 'POST', '/auth/logout', { token: accessToken, body: {} })).status, 200)
  // B refuses the token once its copy is distrusted and the lookup asks the database (until then it may
  // still answer from its copy, which never heard of the logout).
  const seen: string[] = []
  const refused = await until(async () => {
    const res = await api(b.base, 'GET', '/auth/me', { token: accessToken })
    seen.push(String(res.status))
    return res.status === 401 ? res : undefined
  }, 10_000)
  t.same(
    [refused?.status, refused?.body.message],
    [401, REVOKED],
    `B refuses the token (seen ${seen.join(',')})`,
  )
  // … and closes its sessions of it, while Redis is still cut off.
  await sessions.closed()
  endedRevoked(t, sessions, 'while Redis is still cut off')
  t.ok(bystander.isOpen(), "another token's sessions stay open")
  proxy.release()
})

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
