// Issue 11, faults: Redis (a private redis-server) goes away under two instances and comes back.
//   - revocation fails closed: authenticated calls get 503, no revoked token passes on any instance;
//   - rate limiting keeps working from each instance's memory fallback, logged once per instance;
//   - when Redis returns, everything recovers without a restart (revocation, limits, pub/sub).
import { once } from 'node:events'
import t from 'tap'
import {
  api,
  type Instance,
  login,
  newBackend,
  PrivateRedis,
  registerAndLogin,
  startInstances,
  until,
  WebSocket,
} from './scale-helpers.js'

const REVOKED = 'Token has been revoked'
const STORE_DOWN = 'rate-limit store failed'

t.test('Redis outage under two instances', async (t) => {
  const redis = await PrivateRedis.create()
  const backend = newBackend({ redisUrl: redis.url })
  const instances = (await startInstances(t, backend)) as [Instance, Instance]
  t.teardown(() => redis.close())
  const [a, b] = instances

  const { tokens: kept } = await registerAndLogin(a.base, 'carol')
  const revoked = await login(a.base, 'carol')
  t.equal((await api(a.base, 'POST', '/auth/logout', { token: revoked.accessToken, body: {} })).status, 200)
  for (const i of instances) {
    const res = await api(i.base, 'GET', '/auth/me', { token: revoked.accessToken })
    t.equal(res.body.message, REVOKED, `revoked on ${i.name} before the outage`)
  }

  // Stopped with SHUTDOWN SAVE: the revocation list comes back with Redis (as with a persistent Redis).
  await redis.stop({ save: true })
  const down = performance.now()

  await t.test('revocation fails closed on both instances', async (t) => {
    // Until an instance has seen its Redis connections close, its revocation mirror is still a complete
    // copy (nothing can be revoked while Redis is down) and answers from memory (PROTOCOL.md "Revocation
    // window"): the valid token may pass, the revoked one never. Then the valid one gets the 503; the
    // revoked one the 503 too, or — when the instance asked the database, the list's source of truth
    // (PROTOCOL.md "What each store configuration keeps"), while its Redis client was between
    // reconnects — the 401 `Token has been revoked`: refused either way.
    for (const i of instances) {
      const seen: string[] = []
      const failedClosed = await until(async () => {
        const valid = (await api(i.base, 'GET', '/tasks?limit=1', { token: kept.accessToken })).status
        const gone = (await api(i.base, 'GET', '/tasks?limit=1', { token: revoked.accessToken })).status
        seen.push(`${valid}/${gone}`)
        return valid === 503 && (gone === 503 || gone === 401)
      }, 1000)
      t.ok(
        failedClosed,
        `${i.name} fails closed within 1000 ms of the outage (valid/revoked: ${seen.join(', ')})`,
      )
      t.ok(
        seen.every((pair) => pair.endsWith('/401') || pair.endsWith('/503')),
        `${i.name}: meanwhile the valid token passed at most from the mirror, the revoked one never`,
      )
    }
    for (const i of instances) {
      for (const [label, token] of [
        ['valid', kept.accessToken],
        ['revoked', revoked.accessToken],
      ] as const) {
        const res = await api(i.base, 'GET', '/tasks?limit=1', { token })
        if (label === 'revoked' && res.status === 401) {
          t.match(
            res.body,
            { statusCode: 401, message: 'Token has been revoked' },
            `revoked token on ${i.name}: 401`,
          )
          continue
        }
        t.equal(res.status, 503, `${label} token on ${i.name}: 503`)
        t.match(res.body, {
          statusCode: 503,
          code: 'TRV_SERVICE_UNAVAILABLE',
          error: 'ServiceUnavailableException',
          message: 'Revocation list is unavailable',
          requestId: String,
        })
      }
      // A logout cannot be recorded either: it fails rather than pretending.
      const out = await api(i.base, 'POST', '/auth/logout', { token: kept.accessToken, body: {} })
      t.equal(out.status, 503, `logout on ${i.name} during the outage: 503`)
    }
    t.comment(`first 503s within ${(performance.now() - down).toFixed(0)} ms of the outage`)
  })

  await t.test('rate limiting falls back to per-instance memory, logged once', async (t) => {
    for (const i of instances) {
      const statuses: number[] = []
      // auth.refresh with a token failing its signature: 401 once allowed (liveness is never limited).
      for (let n = 0; n < 105; n++)
        statuses.push((await api(i.base, 'POST', '/auth/refresh', { body: { refreshToken: 'x' } })).status)
      t.equal(statuses.filter((s) => s === 401).length, 100, `${i.name}: 100 allowed by its own counter`)
      t.equal(statuses.filter((s) => s === 429).length, 5, `${i.name}: then 429`)
      const logged = i
        .output()
        .split('\n')
        .filter((line) => line.includes(STORE_DOWN))
      t.equal(logged.length, 1, `${i.name} logged the fallback once`)
      t.match(JSON.parse(logged[0] ?? '{}'), { level: 50, msg: /whenStoreDown=memory/ })
    }
  })

  await t.test('Redis returns: recovery without a restart', async (t) => {
    await redis.start()
    const back = performance.now()
    const recovered = await until(async () => {
      const replies = await Promise.all(
        instances.map((i) => api(i.base, 'GET', '/auth/me', { token: kept.accessToken })),
      )
      return replies.every((r) => r.status === 200)
    }, 10000)
    t.ok(recovered, 'the valid token works again on both instances')
    t.comment(
      `authenticated calls recovered ${(performance.now() - back).toFixed(0)} ms after Redis restarted`,
    )
    for (const i of instances) {
      const res = await api(i.base, 'GET', '/auth/me', { token: revoked.accessToken })
      t.same([res.status, res.body.message], [401, REVOKED], `the revoked token still fails on ${i.name}`)
    }

    // Rate limits are shared again (counters in Redis, not the per-instance fallback).
    const { Redis } = await import('ioredis')
    const client = new Redis(redis.url)
    t.teardown(() => client.disconnect())
    await api(a.base, 'GET', '/auth/me', { token: kept.accessToken })
    const keys = await client.keys(`${backend.prefix}rl:*`)
    t.ok(keys.length > 0, `rate-limit counters are in Redis again (${keys.length} keys)`)
    for (const i of instances)
      t.equal(
        i
          .output()
          .split('\n')
          .filter((l) => l.includes(STORE_DOWN)).length,
        1,
        `${i.name}: still one log line`,
      )

    // Pub/sub is back: a logout on A closes a WebSocket session on B (waits for B to resubscribe).
    const fresh = await login(a.base, 'carol')
    const ws = new WebSocket(`ws://127.0.0.1:${b.http}/ws?token=${fresh.accessToken}&format=json`)
    await once(ws, 'open')
    const closed = once(ws, 'close')
    const resubscribed = await until(
      async () => (await client.pubsub('NUMSUB', `${backend.prefix}revocations`))[1] === 2,
      5000,
    )
    t.ok(resubscribed, 'both instances subscribed to revocations again')
    const out = await api(a.base, 'POST', '/auth/logout', { token: fresh.accessToken, body: {} })
    t.equal(out.status, 200)
    const timer = setTimeout(() => ws.terminate(), 5000)
    const [code, reason] = (await closed) as [number, Buffer]
    clearTimeout(timer)
    t.same([code, reason.toString()], [4001, REVOKED], 'the session on B is closed')
  })
})
