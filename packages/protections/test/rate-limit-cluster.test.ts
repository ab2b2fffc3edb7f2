// Rate limits on a Redis Cluster of 3 primaries the test starts (scripts/redis-cluster.mjs): exact across
// instances, a slot migration under load costs retries (ASK/MOVED followed by ioredis), not errors, and a
// cluster that is gone fails closed within redisTimeoutMs.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import trivium from '@trivium/core'
import { type RateLimitPluginOptions, rateLimit } from '@trivium/protections'
import Fastify, { type FastifyInstance } from 'fastify'
import { Cluster } from 'ioredis'
import t from 'tap'
import { migrateSlot, ownerOf, startCluster } from '../../../scripts/redis-cluster.mjs'

const PORTS = [17410, 17411, 17412]

const redis = await startCluster({ ports: PORTS })
t.teardown(() => redis.stop())

/** A Cluster client as the README recommends it (no offline queue), once connected. */
async function clusterClient(): Promise<Cluster> {
  const client = new Cluster(redis.nodes, { enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  await once(client, 'ready')
  return client
}

async function build(options: RateLimitPluginOptions): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(trivium)
  await app.register(rateLimit, { afterAuth: false, ...options })
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  await app.ready()
  t.teardown(() => app.close())
  return app
}

/** Errors reported by a node (INFO errorstats), e.g. { ASK: 3, MOVED: 1 }. */
async function errorStats(port: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const [, name, count] of (await redis.cli(port, 'INFO', 'errorstats')).matchAll(
    /errorstat_(\w+):count=(\d+)/g,
  )) {
    out[name!] = Number(count)
  }
  return out
}

t.test(
  'two instances, each with its own Cluster client: 2 × 500 concurrent calls, limit 100 → exactly 100',
  async (t) => {
    const prefix = `test_${randomBytes(6).toString('hex')}:rl:`
    // A generous timeout: on a loaded machine 1000 calls in flight must not fail for slowness (the
    // failure path is the last test's); any call that fails still shows up as a 503.
    const options = {
      redisPrefix: prefix,
      redisTimeoutMs: 10_000,
      whenStoreDown: 'closed' as const,
      limits: { ping: { requests: 100, windowMs: 60_000 } },
    }
    const a = await build({ ...options, redis: await clusterClient() })
    const b = await build({ ...options, redis: await clusterClient() })
    const calls = []
    for (let i = 0; i < 500; i++) calls.push(a.inject('/ping'), b.inject('/ping'))
    const responses = await Promise.all(calls)
    const allowed = responses.filter((r) => r.statusCode === 200)
    const denied = responses.filter((r) => r.statusCode === 429)
    t.equal(allowed.length, 100, 'exactly `requests` allowed across both instances')
    t.equal(
      denied.length,
      900,
      'every other call denied (none failed: whenStoreDown=closed would answer 503)',
    )
    t.same(
      allowed.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((x, y) => x - y),
      Array.from({ length: 100 }, (_, i) => i),
      'every remaining value 0..99 handed out once',
    )
    // The window's remaining seconds: 60 unless the machine took over a second for the 1000 calls.
    t.same(
      denied.filter((r) => {
        const retryAfter = Number(r.headers['retry-after'])
        return !(
          retryAfter >= 1 &&
          retryAfter <= 60 &&
          r.json().message === `Rate limit exceeded. Try again in ${retryAfter} seconds`
        )
      }),
      [],
      'every denial says when the shared window ends',
    )
    const key = `${prefix}ip:127.0.0.1:ping`
    const { port } = await ownerOf(PORTS[0]!, key)
    t.equal(await redis.cli(port, 'HGET', key, 'c'), '100\n', 'the counter lives on the node owning its slot')
  },
)

t.test('a migration of the key’s slot under load: every call answered, the count exact', async (t) => {
  const prefix = `test_${randomBytes(6).toString('hex')}:rl:`
  const options = {
    redisPrefix: prefix,
    redisTimeoutMs: 10_000,
    whenStoreDown: 'closed' as const,
    limits: { ping: { requests: 1_000_000, windowMs: 60_000 } },
  }
  const a = await build({ ...options, redis: await clusterClient() })
  const b = await build({ ...options, redis: await clusterClient() })
  const key = `${prefix}ip:127.0.0.1:ping`
  await a.inject('/ping') // the key exists before the migration starts
  const { slot, port: from } = await ownerOf(PORTS[0]!, key)
  const to = PORTS.find((p) => p !== from)!
  const before = { from: await errorStats(from), to: await errorStats(to) }

  const statuses = new Map<number, number>()
  let answered = 0
  let running = true
  const worker = async (app: FastifyInstance) => {
    while (running) {
      const r = await app.inject('/ping')
      statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1)
      answered++
    }
  }
  const workers = [
    ...Array.from({ length: 20 }, () => worker(a)),
    ...Array.from({ length: 20 }, () => worker(b)),
  ]
  const waitFor = async (n: number) => {
    const target = answered + n
    while (answered < target) await new Promise((r) => setImmediate(r))
  }
  await waitFor(200)
  const { moved } = await migrateSlot({
    slot,
    fromPort: from,
    toPort: to,
    allPorts: PORTS,
    onMigrating: () => waitFor(200), // calls while the slot is MIGRATING, before the key moves
  })
  await waitFor(500) // calls after the slot moved: the clients learn the new owner from MOVED
  running = false
  await Promise.all(workers)

  t.equal(moved, 1, 'the key was moved by MIGRATE')
  t.same([...statuses.keys()], [200], `every call allowed, none failed (${answered} calls)`)
  t.equal((await ownerOf(PORTS[0]!, key)).port, to, 'the slot is served by the target node')
  t.equal(await redis.cli(to, 'HGET', key, 'c'), `${answered + 1}\n`, 'no hit lost or counted twice')
  const after = { from: await errorStats(from), to: await errorStats(to) }
  const redirects =
    (after.from.ASK ?? 0) - (before.from.ASK ?? 0) + (after.from.MOVED ?? 0) - (before.from.MOVED ?? 0)
  t.ok(redirects > 0, `the old owner answered ASK/MOVED (${redirects} redirections): retries, not errors`)
})

t.test('the cluster gone: calls fail closed within redisTimeoutMs (503, the documented body)', async (t) => {
  const prefix = `test_${randomBytes(6).toString('hex')}:rl:`
  const app = await build({
    redis: await clusterClient(),
    redisPrefix: prefix,
    redisTimeoutMs: 300,
    whenStoreDown: 'closed',
  })
  t.equal((await app.inject('/ping')).statusCode, 200)
  await redis.stop()
  const r = await app.inject('/ping')
  t.equal(r.statusCode, 503)
  t.equal(r.json().message, 'Rate limit store unavailable')
})
