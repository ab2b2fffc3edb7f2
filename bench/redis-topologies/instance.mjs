// One instance for bench/redis-topologies: a Fastify app with what the demo asks of Redis on every
// authenticated request — a rate-limit hit (protections' RedisStore, per client IP; the bench sends 1000
// different X-Forwarded-For addresses) and a revocation lookup (auth's RedisRevocationStore with the
// mirror, i.e. answered from memory, its heartbeats on the bus) — on one Redis, a Sentinel set or a
// Cluster (BENCH_TOPOLOGY + BENCH_REDIS). Prints `LISTENING <port>`.
const demo = new URL('../../apps/demo/node_modules/', import.meta.url).pathname
const { Redis, Cluster } = await import(`${demo}ioredis/built/index.js`)
const { default: Fastify } = await import(`${demo}fastify/fastify.js`)
const { default: trivium } = await import(`${demo}@trivium/core/dist/index.js`)
const { rateLimit } = await import(`${demo}@trivium/protections/dist/index.js`)
const { RedisRevocationStore } = await import(`${demo}@trivium/auth/dist/index.js`)
const { RedisChannel, RedisPubSub } = await import(`${demo}@trivium/redis-bus/dist/index.js`)

const topology = process.env.BENCH_TOPOLOGY
const spec = JSON.parse(process.env.BENCH_REDIS)
const prefix = process.env.BENCH_PREFIX
let client
if (topology === 'cluster') client = new Cluster(spec.nodes, { enableOfflineQueue: false })
else if (topology === 'sentinel')
  client = new Redis({ sentinels: spec.sentinels, name: spec.name, enableOfflineQueue: false })
else client = new Redis({ host: '127.0.0.1', port: spec.port, enableOfflineQueue: false })
client.on('error', () => {})
await new Promise((resolve) => client.once('ready', resolve))

const quiet = { info() {}, warn() {}, error() {} }
const pubsub = new RedisPubSub({ redis: client, logger: quiet })
const store = new RedisRevocationStore({
  client,
  prefix: `${prefix}blacklist:token:`,
  mirror: { channel: new RedisChannel('revocation-list', { pubsub, prefix }) },
})
await store.mirrorReady(30_000)

const app = Fastify({ trustProxy: true })
await app.register(trivium)
await app.register(rateLimit, {
  afterAuth: false,
  redis: client,
  redisPrefix: `${prefix}rl:`,
  whenStoreDown: 'closed',
  defaultLimit: { requests: 1_000_000_000, windowMs: 60_000 },
})
app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, async () => {
  if (await store.contains('not-revoked')) throw new Error('unexpected')
  return { ok: true }
})
await app.listen({ host: '127.0.0.1', port: 0 })
process.on('SIGTERM', async () => {
  await app.close()
  await store.close()
  await pubsub.close()
  client.disconnect()
  process.exit(0)
})
console.log(`LISTENING ${app.server.address().port}`)
