// The Redis store against the real Redis at 127.0.0.1:6379 (each test its own key prefix, deleted at the
// end), and the behaviour when Redis is unreachable (a closed port).
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { Writable } from 'node:stream'
import trivium from '@trivium/core'
import {
  RateLimiter,
  type RateLimitPluginOptions,
  type RateLimitResult,
  type RateLimitStore,
  RedisStore,
  rateLimit,
} from '@trivium/protections'
import { FIXED_WINDOW_LUA } from '@trivium/protections/internal'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'

const REDIS_URL = 'redis://127.0.0.1:6379'

function prefix(): string {
  return `test_${randomBytes(6).toString('hex')}:rl:`
}

async function cleanup(client: Redis, keyPrefix: string): Promise<void> {
  const keys = await client.keys(`${keyPrefix}*`)
  if (keys.length > 0) await client.del(...keys)
}

/** A client on the real Redis and a key prefix of the test's own, both cleaned up at its end. */
function redisWithPrefix(t: Test) {
  const client = new Redis(REDIS_URL)
  const keyPrefix = prefix()
  t.teardown(async () => {
    await cleanup(client, keyPrefix)
    client.disconnect()
  })
  return { client, keyPrefix }
}

function logCapture() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      cb()
    },
  })
  return { lines, stream }
}

async function build(options: RateLimitPluginOptions, logStream?: Writable) {
  const app = Fastify(logStream ? { logger: { level: 'info', stream: logStream } } : {})
  await app.register(trivium)
  await app.register(rateLimit, { afterAuth: false, ...options })
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  await app.ready()
  return app
}

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

t.test('fixed window in Redis: exact results, key has a PEXPIRE at the window end', async (t) => {
  const { client, keyPrefix } = redisWithPrefix(t)
  const store = new RedisStore(client, { prefix: keyPrefix })
  const limit = { requests: 2, windowMs: 60_000 }
  const before = Date.now()
  const r1 = await store.hit('ip:1.2.3.4:ping', limit)
  const after = Date.now()
  t.equal(r1.isAllowed, true)
  t.equal(r1.remaining, 1)
  t.equal(r1.limit, 2)
  t.equal(r1.retryAfter, 0)
  // The window starts during the hit (Redis's clock is this machine's; 5 ms for rounding), however long it took.
  t.ok(
    r1.resetTime >= before + 60_000 - 5 && r1.resetTime <= after + 60_000 + 5,
    `reset = window start (Redis clock) + window (${r1.resetTime - before - 60_000} ms after the call began)`,
  )
  const r2 = await store.hit('ip:1.2.3.4:ping', limit)
  t.same(r2, { isAllowed: true, remaining: 0, resetTime: r1.resetTime, retryAfter: 0, limit: 2 })
  const r3 = await store.hit('ip:1.2.3.4:ping', limit)
  t.same(r3, { isAllowed: false, remaining: 0, resetTime: r1.resetTime, retryAfter: 60, limit: 2 })
  const key = `${keyPrefix}ip:1.2.3.4:ping`
  t.same(
    await client.hgetall(key),
    { c: '2', s: String(r1.resetTime - 60_000) },
    'denied requests are not counted',
  )
  const pttl = await client.pttl(key)
  t.ok(pttl > 55_000 && pttl <= 60_000, `PTTL ${pttl} within the window`)
  t.equal(await client.pexpiretime(key), r1.resetTime, 'the key expires exactly at the window end')
})

t.test('a new window after windowMs; the key expires by itself', async (t) => {
  const { client, keyPrefix } = redisWithPrefix(t)
  const store = new RedisStore(client, { prefix: keyPrefix })
  // A window the second hit cannot miss on a loaded machine (60 ms could pass between two round trips).
  const limit = { requests: 1, windowMs: 1000 }
  t.equal((await store.hit('k', limit)).isAllowed, true)
  t.equal((await store.hit('k', limit)).isAllowed, false)
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal(await client.exists(`${keyPrefix}k`), 0, 'expired, nothing left behind')
  const again = await store.hit('k', limit)
  t.equal(again.isAllowed, true)
  t.equal(again.remaining, 0)
})

t.test('two app instances sharing one Redis never allow more than `requests` per window', async (t) => {
  const keyPrefix = prefix()
  const clientA = new Redis(REDIS_URL)
  const clientB = new Redis(REDIS_URL)
  const options = {
    redis: undefined,
    redisPrefix: keyPrefix,
    limits: { ping: { requests: 25, windowMs: 60_000 } },
    // This test is about the count two instances share, not about latency: at load 20–28 a reply to one of the
    // 120 requests in flight can take longer than the default 500 ms, and that hit is then counted in the
    // instance's own memory (whenStoreDown 'memory'), which is the outage behaviour, not the shared count.
    redisTimeoutMs: 10_000,
  }
  const appA = await build({ ...options, redis: clientA })
  const appB = await build({ ...options, redis: clientB })
  t.teardown(async () => {
    await appA.close()
    await appB.close()
    await cleanup(clientA, keyPrefix)
    clientA.disconnect()
    clientB.disconnect()
  })
  const requests = []
  for (let i = 0; i < 60; i++) {
    requests.push(appA.inject('/ping'), appB.inject('/ping'))
  }
  const responses = await Promise.all(requests)
  const allowed = responses.filter((r) => r.statusCode === 200)
  const denied = responses.filter((r) => r.statusCode === 429)
  t.equal(allowed.length, 25, 'exactly `requests` allowed across both instances')
  t.equal(denied.length, 95)
  t.same(
    allowed.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b),
    Array.from({ length: 25 }, (_, i) => i),
    'every remaining value 0..24 handed out once',
  )
  t.equal(new Set(allowed.map((r) => r.headers['x-ratelimit-reset'])).size, 1, 'one shared window end')
  t.ok(denied.every((r) => r.json().message === 'Rate limit exceeded. Try again in 60 seconds'))
  t.equal(await clientA.hget(`${keyPrefix}ip:127.0.0.1:ping`, 'c'), '25')
})

/** The real client, counting the script calls and the hits (keys) in each. */
function counting(client: Redis, extra: { isCluster?: boolean } = {}) {
  const calls: number[] = []
  const counted = {
    ...extra,
    evalsha: (sha: string, numkeys: number, ...args: (string | number)[]) => {
      calls.push(numkeys)
      return client.evalsha(sha, numkeys, ...args)
    },
    eval: (script: string, numkeys: number, ...args: (string | number)[]) => {
      calls.push(numkeys)
      return client.eval(script, numkeys, ...args)
    },
  }
  return { calls, counted }
}

const verdicts = (results: RateLimitResult[]) => results.map((r) => [r.isAllowed, r.remaining, r.retryAfter])

t.test('the hits of one event-loop turn go to Redis as one script call, each verdict exact', async (t) => {
  const { client, keyPrefix } = redisWithPrefix(t)
  await client.script('LOAD', FIXED_WINDOW_LUA)
  const { calls, counted } = counting(client)
  const store = new RedisStore(counted, { prefix: keyPrefix })
  // 8 hits on k (limit 5) interleaved with 3 on j (limit 2), all in this turn.
  const k: Promise<RateLimitResult>[] = []
  const j: Promise<RateLimitResult>[] = []
  for (let i = 0; i < 8; i++) {
    k.push(store.hit('k', { requests: 5, windowMs: 60_000 }))
    if (i < 3) j.push(store.hit('j', { requests: 2, windowMs: 30_000 }))
  }
  const kResults = await Promise.all(k)
  const jResults = await Promise.all(j)
  t.same(calls, [11], 'one EVALSHA carrying the 11 hits')
  t.same(verdicts(kResults), [
    [true, 4, 0],
    [true, 3, 0],
    [true, 2, 0],
    [true, 1, 0],
    [true, 0, 0],
    [false, 0, 60],
    [false, 0, 60],
    [false, 0, 60],
  ])
  t.same(verdicts(jResults), [
    [true, 1, 0],
    [true, 0, 0],
    [false, 0, 30],
  ])
  t.equal(await client.hget(`${keyPrefix}k`, 'c'), '5', 'denied hits are not counted')
  t.equal(await client.hget(`${keyPrefix}j`, 'c'), '2')
  const next = await store.hit('k', { requests: 5, windowMs: 60_000 })
  t.same(verdicts([next]), [[false, 0, 60]], 'the next turn sees the batch')
  t.same(calls, [11, 1])
})

t.test('maxBatch bounds a script call; an ioredis Cluster gets one call per key', async (t) => {
  const { client, keyPrefix } = redisWithPrefix(t)
  await client.script('LOAD', FIXED_WINDOW_LUA)
  const limit = { requests: 100, windowMs: 60_000 }
  const batched = counting(client)
  const store = new RedisStore(batched.counted, { prefix: keyPrefix, maxBatch: 10 })
  const results = await Promise.all(Array.from({ length: 23 }, () => store.hit('a', limit)))
  t.same(batched.calls, [10, 10, 3])
  t.same(
    results.map((r) => r.remaining),
    Array.from({ length: 23 }, (_, i) => 99 - i),
  )
  const cluster = counting(client, { isCluster: true })
  const clusterStore = new RedisStore(cluster.counted, { prefix: keyPrefix })
  const clusterResults = await Promise.all([
    clusterStore.hit('b', limit),
    clusterStore.hit('c', limit),
    clusterStore.hit('b', limit),
    clusterStore.hit('d', limit),
    clusterStore.hit('b', limit),
  ])
  t.same(cluster.calls, [3, 1, 1], 'keys of one call must share a slot in a Cluster: one key per call')
  t.same(
    clusterResults.map((r) => r.remaining),
    [99, 99, 98, 99, 97],
    'the hits on b, batched together, in arrival order',
  )
  t.throws(() => new RedisStore(client, { maxBatch: 0 }), {
    message: '@trivium/protections: redisMaxBatch must be an integer from 1 to 1000',
  })
})

t.test('a batch without a reply within timeoutMs fails every hit in it', async (t) => {
  const silent = {
    evalsha: () => new Promise<unknown>(() => {}),
    eval: () => new Promise<unknown>(() => {}),
  }
  const store = new RedisStore(silent, { timeoutMs: 50 })
  const limit = { requests: 5, windowMs: 1000 }
  const outcomes = await Promise.allSettled([store.hit('a', limit), store.hit('b', limit)])
  t.same(
    outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error).message : 'fulfilled')),
    [
      '@trivium/protections: rate-limit store unavailable: no reply within 50 ms',
      '@trivium/protections: rate-limit store unavailable: no reply within 50 ms',
    ],
  )
})

t.test(
  'a reply that arrived while the process was blocked past timeoutMs is used, not timed out',
  async (t) => {
    const { client, keyPrefix } = redisWithPrefix(t)
    await client.script('LOAD', FIXED_WINDOW_LUA)
    await client.ping() // connected: the hit below is one round trip
    const store = new RedisStore(client, { prefix: keyPrefix, timeoutMs: 50 })
    const hit = store.hit('lag', { requests: 5, windowMs: 60_000 })
    // The batch is sent at setImmediate; then this process blocks (a loaded event loop) well past the
    // timeout while Redis answers. The timer is due and the reply waits in the socket at the same time.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        const until = Date.now() + 300
        while (Date.now() < until) {}
        resolve()
      }),
    )
    const result = await hit
    t.same(verdicts([result]), [[true, 4, 0]], 'the verdict Redis gave')
    t.equal(await client.hget(`${keyPrefix}lag`, 'c'), '1')
  },
)

t.test('NOSCRIPT (script cache flushed): falls back to EVAL with the script text', async (t) => {
  const { client, keyPrefix } = redisWithPrefix(t)
  const used: string[] = []
  const flushed = {
    evalsha: async () => {
      used.push('evalsha')
      throw new Error('NOSCRIPT No matching script. Please use EVAL.')
    },
    eval: (script: string, numkeys: number, ...args: (string | number)[]) => {
      used.push('eval')
      return client.eval(script, numkeys, ...args)
    },
  }
  const store = new RedisStore(flushed, { prefix: keyPrefix })
  t.equal((await store.hit('k', { requests: 5, windowMs: 1000 })).remaining, 4)
  t.same(used, ['evalsha', 'eval'])
})

t.test(
  'Redis unreachable, default whenStoreDown=memory: still limited per instance, logged once',
  async (t) => {
    const port = await closedPort()
    const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 })
    client.on('error', () => {})
    const { lines, stream } = logCapture()
    const app = await build(
      { redis: client, redisTimeoutMs: 100, limits: { ping: { requests: 2, windowMs: 60_000 } } },
      stream,
    )
    t.teardown(async () => {
      await app.close()
      client.disconnect()
    })
    const r1 = await app.inject('/ping')
    t.equal(r1.statusCode, 200)
    t.equal(r1.headers['x-ratelimit-remaining'], '1')
    t.equal((await app.inject('/ping')).statusCode, 200)
    const denied = await app.inject('/ping')
    t.equal(denied.statusCode, 429)
    t.equal(denied.json().message, 'Rate limit exceeded. Try again in 60 seconds')
    for (let i = 0; i < 5; i++) await app.inject('/ping')
    const errors = lines.filter((l) => String(l.msg).includes('rate-limit store failed'))
    t.equal(errors.length, 1, 'one log line for the outage, not one per request')
    t.equal(errors[0]?.level, 50)
    t.equal(errors[0]?.msg, '@trivium/protections: rate-limit store failed; whenStoreDown=memory')
    t.equal(app.triviumRateLimit.limiter.storeDown, true)
  },
)

t.test('Redis unreachable, whenStoreDown=closed: 503 ServiceUnavailableException', async (t) => {
  const port = await closedPort()
  const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 })
  client.on('error', () => {})
  const app = await build({ redis: client, redisTimeoutMs: 100, whenStoreDown: 'closed' })
  t.teardown(async () => {
    await app.close()
    client.disconnect()
  })
  const r = await app.inject('/ping')
  t.equal(r.statusCode, 503)
  t.equal(r.json().code, 'TRV_SERVICE_UNAVAILABLE')
  t.equal(r.json().error, 'ServiceUnavailableException')
  t.equal(r.json().message, 'Rate limit store unavailable')
})

t.test('Redis unreachable, whenStoreDown=open: allowed, remaining = requests', async (t) => {
  const port = await closedPort()
  const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 })
  client.on('error', () => {})
  const app = await build({
    redis: client,
    redisTimeoutMs: 100,
    whenStoreDown: 'open',
    limits: { ping: { requests: 1, windowMs: 1000 } },
  })
  t.teardown(async () => {
    await app.close()
    client.disconnect()
  })
  for (let i = 0; i < 3; i++) {
    const r = await app.inject('/ping')
    t.equal(r.statusCode, 200)
    t.equal(r.headers['x-ratelimit-remaining'], '1')
  }
})

t.test('limiter: outage logged once, recovery logged once, fallback dropped on recovery', async (t) => {
  let failing = true
  const calls: string[] = []
  const store: RateLimitStore = {
    async hit(key): Promise<RateLimitResult> {
      calls.push(key)
      if (failing) throw new Error('ECONNREFUSED')
      return { isAllowed: true, remaining: 9, resetTime: 1, retryAfter: 0, limit: 10 }
    },
  }
  const logged: string[] = []
  const log = {
    error: (_o: unknown, msg: string) => logged.push(`error ${msg}`),
    info: (msg: string) => logged.push(`info ${msg}`),
  } as never
  const limiter = new RateLimiter({ store, log })
  const limit = { requests: 2, windowMs: 60_000 }
  t.equal((await limiter.check('a', limit)).remaining, 1, 'fallback memory store counts')
  t.equal((await limiter.check('a', limit)).remaining, 0)
  t.equal((await limiter.check('a', limit)).isAllowed, false)
  failing = false
  t.equal((await limiter.check('a', limit)).remaining, 9, 'back on the store')
  t.equal((await limiter.check('a', limit)).remaining, 9)
  t.same(logged, [
    'error @trivium/protections: rate-limit store failed; whenStoreDown=memory',
    'info @trivium/protections: rate-limit store answers again',
  ])
  t.equal(calls.length, 5, 'the store is tried on every request, so recovery is noticed')
  await limiter.close()
})
