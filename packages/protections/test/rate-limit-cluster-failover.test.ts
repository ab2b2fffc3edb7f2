// Rate limits on a Redis Cluster of 3 primaries with a replica each, started by the test: the primary
// holding the counter's slot is killed under load. Meanwhile calls fail closed (whenStoreDown=closed:
// 503, the documented body; never a 500), and once the replica is promoted they are answered again
// without a restart of anything.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import trivium from '@trivium/core'
import { rateLimit } from '@trivium/protections'
import Fastify, { type FastifyInstance } from 'fastify'
import { Cluster } from 'ioredis'
import t from 'tap'
import { ownerOf, startCluster } from '../../../scripts/redis-cluster.mjs'
import { waitBound } from '../../../scripts/test/waits.js'

const PORTS = [17446, 17447, 17448, 17449, 17450, 17451]

t.test('the primary of a counter’s slot fails over: 503 meanwhile, answered again after', async (t) => {
  const redis = await startCluster({ ports: PORTS, replicas: 1 })
  t.teardown(() => redis.stop())
  const client = new Cluster(redis.nodes, { enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  await once(client, 'ready')
  const prefix = `test_${randomBytes(6).toString('hex')}:rl:`
  const app: FastifyInstance = Fastify()
  await app.register(trivium)
  await app.register(rateLimit, {
    afterAuth: false,
    redis: client,
    redisPrefix: prefix,
    redisTimeoutMs: 500,
    whenStoreDown: 'closed',
    limits: { ping: { requests: 1_000_000, windowMs: 60_000 } },
  })
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  await app.ready()
  t.teardown(() => app.close())
  t.equal((await app.inject('/ping')).statusCode, 200)
  const key = `${prefix}ip:127.0.0.1:ping`
  const { port: primary } = await ownerOf(PORTS[0]!, key)
  const alive = PORTS.find((p) => p !== primary)!

  const statuses = new Map<number, number>()
  const messages = new Set<string>()
  let running = true
  t.teardown(() => {
    running = false
  })
  let okAfterPromotion = 0
  let promoted = false
  const worker = async () => {
    while (running) {
      const r = await app.inject('/ping')
      statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1)
      if (r.statusCode !== 200) messages.add(r.json().message)
      if (promoted && r.statusCode === 200) okAfterPromotion++
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  }
  const workers = Array.from({ length: 10 }, worker)
  const killedAt = Date.now()
  await redis.kill(primary)
  const end = Date.now() + waitBound(30_000)
  while ((await ownerOf(alive, key).catch(() => ({ port: primary }))).port === primary) {
    if (Date.now() > end) throw new Error('the replica was not promoted within 30 s')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  promoted = true
  while (okAfterPromotion < 50) {
    if (Date.now() > end) throw new Error('calls not answered again within 30 s of the kill')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.comment(`primary killed → calls answered again: ${Date.now() - killedAt} ms (cluster-node-timeout 2000)`)
  running = false
  await Promise.all(workers)
  t.same(
    [...statuses.keys()].filter((s) => s !== 200 && s !== 503),
    [],
    `only 200 and 503 (${JSON.stringify(Object.fromEntries(statuses))})`,
  )
  t.ok((statuses.get(503) ?? 0) > 0, 'calls failed closed while the slot had no primary')
  t.same([...messages], ['Rate limit store unavailable'], 'the documented body')
  t.ok(okAfterPromotion >= 50, 'answered again after the promotion, nothing restarted')
})
