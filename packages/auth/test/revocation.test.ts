import { randomBytes } from 'node:crypto'
import net from 'node:net'
import {
  AuthService,
  MemoryRevocationStore,
  RedisRevocationStore,
  type RevocationStore,
  TokenService,
} from '@trivium/auth'
import { SqlRevocationStore } from '@trivium/auth/sql'
import { isTriviumError } from '@trivium/core'
import { RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { ISSUER, manualClock, SECRET } from './helpers.js'

const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TRIVIUM_TEST_REDIS ?? 'redis://127.0.0.1:6379'

type Clock = ReturnType<typeof manualClock>

/** The same contract on every store. `wait(s)` moves time for the store (Redis: real time). */
async function contract(
  t: Test,
  store: RevocationStore,
  wait: (seconds: number) => Promise<void>,
  exactCleanup = true,
) {
  t.equal(await store.contains('a'), false)
  await store.add('a')
  t.equal(await store.contains('a'), true, 'listed without ttl')
  await store.add('b', 1)
  t.equal(await store.contains('b'), true, 'listed with ttl')
  await store.add('c', 100)
  await store.remove('a')
  t.equal(await store.contains('a'), false, 'removed')
  await store.remove('nothing') // no error
  await store.add('a') // add again after remove
  t.equal(await store.contains('a'), true)
  await store.add('a', 100) // re-adding updates the ttl
  t.equal(await store.contains('a'), true)
  await wait(1.2)
  t.equal(await store.contains('b'), false, 'entry gone after its ttl')
  t.equal(await store.contains('c'), true, 'longer ttl still listed')
  const removed = await store.cleanup()
  if (exactCleanup) t.equal(removed, 1, 'cleanup deletes the expired entry')
  t.equal(await store.contains('c'), true)
  await t.rejects(store.add('', 5), /jti must be a non-empty string/)
  await t.rejects(store.add('x', -1), /ttlSeconds must be a positive number/)
}

t.test('memory store', async (t) => {
  const clock: Clock = manualClock()
  const store = new MemoryRevocationStore({ clock, sweepIntervalMs: 0 })
  t.teardown(() => store.close())
  await contract(t, store, async (s) => clock.advance(s * 1000), false)
  t.equal(store.size, 2)
  await store.add('short', 1)
  clock.advance(1000)
  t.equal(await store.cleanup(), 1, 'cleanup drops entries whose ttl passed')
  t.equal(store.size, 2)
})

t.test('redis store', async (t) => {
  const client = new Redis(REDIS_URL, { enableOfflineQueue: true })
  const prefix = `test_${randomBytes(6).toString('hex')}:blacklist:token:`
  t.teardown(async () => {
    const keys = await client.keys(`${prefix}*`)
    if (keys.length) await client.del(...keys)
    client.disconnect()
  })
  const store = new RedisRevocationStore({ client, prefix })
  await contract(t, store, (s) => new Promise((r) => setTimeout(r, s * 1000)), false)
  t.equal(await client.exists(`${prefix}a`), 1, 'key is <prefix><jti>')
  const ttl = await client.ttl(`${prefix}c`)
  t.ok(ttl > 90 && ttl <= 100, `expiry via TTL (${ttl})`)
  t.equal(new RedisRevocationStore({ client }).prefix, 'blacklist:token:', 'default prefix')
})

function sqlEngines() {
  return [
    {
      name: 'pglite',
      open: async (t: Test): Promise<SqlClient> => {
        const client = await connectPglite()
        t.teardown(() => client.close())
        return client
      },
    },
    {
      name: 'postgres',
      open: async (t: Test): Promise<SqlClient> => {
        const schema = `test_${randomBytes(6).toString('hex')}`
        const client = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
        t.teardown(async () => {
          await client.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
          await client.close()
        })
        return client
      },
    },
  ]
}

for (const engine of sqlEngines()) {
  t.test(`sql store on ${engine.name}`, async (t) => {
    const client = await engine.open(t)
    const clock: Clock = manualClock(Date.now())
    const store = new SqlRevocationStore({ client, clock })
    await store.migrate()
    await store.migrate() // idempotent
    await contract(t, store, async (s) => clock.advance(s * 1000))
    const { rows } = await client.query<{ jti: string; expires_at: Date | null; created_at: Date }>(
      'SELECT jti, expires_at, created_at FROM revoked_tokens ORDER BY jti',
    )
    t.same(
      rows.map((r) => r.jti),
      ['a', 'c'],
    )
    t.ok(rows[0]!.created_at instanceof Date)
    // contains is true only while expires_at is null or later than now; the boundary is exclusive
    await client.query("INSERT INTO revoked_tokens (jti, expires_at) VALUES ('edge', $1)", [
      new Date(clock()),
    ])
    t.equal(await store.contains('edge'), false, 'expires_at == now is not listed')
    await client.query("INSERT INTO revoked_tokens (jti, expires_at) VALUES ('forever', NULL)")
    t.equal(await store.contains('forever'), true)
    t.equal(await store.cleanup(), 1, 'cleanup deletes expires_at <= now, keeps NULL')
    t.equal(await store.contains('forever'), true)
    // an odd jti is a parameter, never SQL
    await store.add("x'); DROP TABLE revoked_tokens; --", 10)
    t.equal(await store.contains("x'); DROP TABLE revoked_tokens; --"), true)
  })
}

t.test('revokeToken lists the jti with the remaining lifetime', async (t) => {
  const clock: Clock = manualClock()
  const tokens = new TokenService({ secret: SECRET, issuer: ISSUER, clock })
  const revocation = new MemoryRevocationStore({ clock, sweepIntervalMs: 0 })
  const auth = new AuthService({ tokens, revocation })
  const token = await auth.issueAccessToken(
    { id: 1, username: 'u', email: 'u@example.com' },
    { ttlSeconds: 100 },
  )
  const jti = tokens.validate(token).claims!.jti
  clock.advance(40_000)
  await auth.revokeToken(token)
  t.equal(await revocation.contains(jti), true)
  clock.advance(59_000)
  t.equal(await revocation.contains(jti), true, 'listed until the token expires')
  clock.advance(1_000)
  t.equal(await revocation.contains(jti), false, 'entry expires with the token')
  // forged token: refused, nothing listed
  const forged = `${token.slice(0, -4)}AAAA`
  await t.rejects(auth.revokeToken(forged), {
    message: 'Invalid token: The token signature is invalid.',
    statusCode: 401,
  })
  await t.rejects(auth.revokeToken('garbage'), { code: 'TRV_UNAUTHORIZED' })
  // already expired token: nothing to list, no error
  await auth.revokeToken(token)
  t.equal(revocation.size, 0)
  // spec: removed from the list -> valid again if not expired
  const t2 = await auth.issueAccessToken({ id: 1, username: 'u', email: 'u@example.com' })
  await auth.revokeToken(t2)
  await t.rejects(auth.authenticate(t2), { message: 'Token has been revoked' })
  await revocation.remove(tokens.validate(t2).claims!.jti)
  t.equal((await auth.authenticate(t2)).username, 'u')
})

/** A TCP proxy to the shared Redis that the test can stop and start (the shared server stays up). */
async function startProxy(port = 0): Promise<{ port: number; stop: () => Promise<void> }> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((inbound) => {
    const outbound = net.connect(6379, '127.0.0.1')
    sockets.add(inbound).add(outbound)
    inbound.pipe(outbound).pipe(inbound)
    const close = () => {
      inbound.destroy()
      outbound.destroy()
    }
    inbound.on('error', close).on('close', close)
    outbound.on('error', close).on('close', close)
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const actual = (server.address() as net.AddressInfo).port
  return {
    port: actual,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

t.test('redis unreachable: fail closed with 503, recover by itself', async (t) => {
  // 1. a port nobody listens on
  const dead = new Redis({
    host: '127.0.0.1',
    port: 1,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
    retryStrategy: () => 50,
  })
  dead.on('error', () => {})
  t.teardown(() => dead.disconnect())
  const deadStore = new RedisRevocationStore({ client: dead, commandTimeoutMs: 300 })
  const err = await deadStore.contains('x').catch((e) => e)
  t.ok(isTriviumError(err))
  t.equal(err.statusCode, 503)
  t.equal(err.code, 'TRV_SERVICE_UNAVAILABLE')
  t.equal(err.message, 'Revocation list is unavailable')
  await t.rejects(deadStore.add('x', 5), { code: 'TRV_SERVICE_UNAVAILABLE', statusCode: 503 })

  // 2. the same client with an offline queue: the command times out instead of waiting forever
  const queued = new Redis({ host: '127.0.0.1', port: 1, enableOfflineQueue: true, retryStrategy: () => 50 })
  queued.on('error', () => {})
  t.teardown(() => queued.disconnect())
  await t.rejects(new RedisRevocationStore({ client: queued, commandTimeoutMs: 200 }).contains('x'), {
    code: 'TRV_SERVICE_UNAVAILABLE',
    statusCode: 503,
  })

  // 3. through a proxy that goes away and comes back
  const proxy = await startProxy()
  const client = new Redis({
    host: '127.0.0.1',
    port: proxy.port,
    enableOfflineQueue: false,
    retryStrategy: () => 50,
  })
  client.on('error', () => {})
  const prefix = `test_${randomBytes(6).toString('hex')}:`
  const store = new RedisRevocationStore({ client, prefix, commandTimeoutMs: 500 })
  t.teardown(async () => {
    client.disconnect()
    const direct = new Redis(REDIS_URL)
    await direct.del(`${prefix}j1`)
    direct.disconnect()
  })
  await new Promise<void>((resolve) => client.once('ready', () => resolve()))
  await store.add('j1', 60)
  t.equal(await store.contains('j1'), true)
  await proxy.stop()
  await within(10_000, () => client.status !== 'ready', 'client notices')
  await t.rejects(
    store.contains('j1'),
    { code: 'TRV_SERVICE_UNAVAILABLE', statusCode: 503 },
    'down: refuse, never "not revoked"',
  )
  const again = await startProxy(proxy.port)
  t.teardown(() => again.stop())
  const deadline = Date.now() + waitBound(5000)
  let recovered = false
  while (Date.now() < deadline) {
    try {
      recovered = await store.contains('j1')
      break
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  t.equal(recovered, true, 'back up: answers again without intervention')
})

// ---- The mirror: RedisRevocationStore answering `contains` from memory (README "Revocation list") ----

interface Instance {
  client: Redis
  pubsub: RedisPubSub
  store: RedisRevocationStore
  /** Redis commands the store's client sent, by name. */
  sent: Record<string, number>
}

/** Counts the commands sent through `client` (ioredis `sendCommand` sees every one, pipelined or not). */
function countCommands(client: Redis): Record<string, number> {
  const sent: Record<string, number> = {}
  const send = client.sendCommand.bind(client)
  client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    sent[command.name] = (sent[command.name] ?? 0) + 1
    return (send as (...a: unknown[]) => unknown)(command, ...rest)
  }) as typeof client.sendCommand
  return sent
}

interface MirrorSetup {
  redisPort?: number
  pubsubPort?: number
  /** Channel prefix (default: the list's prefix). */
  channelPrefix?: string
  heartbeatMs?: number
  maxSilenceMs?: number
}

async function mirrored(t: Test, prefix: string, setup: MirrorSetup = {}): Promise<Instance> {
  const client = new Redis({
    host: '127.0.0.1',
    port: setup.redisPort ?? 6379,
    enableOfflineQueue: false,
    retryStrategy: () => 50,
  })
  client.on('error', () => {})
  const pubsub = new RedisPubSub({
    redis: `redis://127.0.0.1:${setup.pubsubPort ?? 6379}`,
    logger: { info() {}, warn() {}, error() {} },
    retryMaxDelayMs: 50,
  })
  const channel = new RedisChannel<unknown>('revocation-list', {
    pubsub,
    prefix: setup.channelPrefix ?? prefix,
  })
  const sent = countCommands(client)
  const store = new RedisRevocationStore({
    client,
    prefix,
    commandTimeoutMs: 500,
    mirror: { channel, heartbeatMs: setup.heartbeatMs, maxSilenceMs: setup.maxSilenceMs },
  })
  t.teardown(async () => {
    await store.close()
    await pubsub.close()
    client.disconnect()
  })
  await new Promise<void>((resolve) =>
    client.status === 'ready' ? resolve() : client.once('ready', () => resolve()),
  )
  return { client, pubsub, store, sent }
}

function newPrefix(): string {
  return `test_${randomBytes(6).toString('hex')}:blacklist:token:`
}

async function dropKeys(prefix: string): Promise<void> {
  const direct = new Redis(REDIS_URL)
  const keys = await direct.keys(`${prefix}*`)
  if (keys.length) await direct.del(...keys)
  direct.disconnect()
}

/**
 * Polls `check` until it resolves true; resolves with the ms it took, rejects after `timeoutMs`. Where a
 * time is promised (e.g. 100 ms), `timeoutMs` is that promise with a margin for a loaded machine, and the
 * time measured is printed; elsewhere it is a generous deadline.
 */
async function within(timeoutMs: number, check: () => Promise<boolean> | boolean, what: string) {
  const start = performance.now()
  while (!(await check())) {
    if (performance.now() - start > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 1))
  }
  return performance.now() - start
}

const since = (before: Record<string, number>, now: Record<string, number>) => {
  const diff: Record<string, number> = {}
  for (const [k, v] of Object.entries(now)) if (v !== (before[k] ?? 0)) diff[k] = v - (before[k] ?? 0)
  delete diff.publish // heartbeats
  return diff
}

t.test('redis store with mirror: same contract, answered from memory', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const a = await mirrored(t, prefix)
  t.not(a.store.mirrorState, 'on', 'not trusted before the first load')
  t.equal(new RedisRevocationStore({ client: a.client }).mirrorState, undefined, 'no mirror by default')
  await a.store.mirrorReady(5000)
  t.equal(a.store.mirrorState, 'on')
  await contract(t, a.store, (s) => new Promise((r) => setTimeout(r, s * 1000)), false)
  t.equal(await a.client.exists(`${prefix}a`), 1, 'key is still <prefix><jti>')
  const ttl = await a.client.ttl(`${prefix}c`)
  t.ok(ttl > 90 && ttl <= 100, `expiry via TTL (${ttl})`)
  const ttlA = await a.client.ttl(`${prefix}a`)
  t.ok(ttlA > 90 && ttlA <= 100, `re-adding set the new ttl in Redis (${ttlA})`)

  let before = { ...a.sent }
  for (let i = 0; i < 100; i++) await a.store.contains(i % 2 ? 'a' : 'nope')
  t.same(since(before, a.sent), {}, '100 lookups: no Redis command')
  before = { ...a.sent }
  await a.store.add('one-trip', 60)
  t.same(since(before, a.sent), { evalsha: 1 }, 'an add is one EVALSHA (SET + PUBLISH in one script)')
  t.equal(await a.store.contains('one-trip'), true, 'the adding instance refuses at once')
  before = { ...a.sent }
  await a.store.remove('one-trip')
  t.same(since(before, a.sent), { evalsha: 1 }, 'a remove is one EVALSHA (DEL + PUBLISH)')
  t.equal(await a.client.exists(`${prefix}one-trip`), 0)
  t.equal(await a.store.contains('one-trip'), false)
})

t.test('mirror: loads the list at start; a change on A reaches B within 100 ms', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const plain = new RedisRevocationStore({ client: new Redis(REDIS_URL), prefix, closeClient: true })
  t.teardown(() => plain.close())
  await plain.add('old-forever')
  await plain.add('old-short', 1)
  await plain.add('old-long', 600)
  const a = await mirrored(t, prefix)
  const b = await mirrored(t, prefix)
  // Another list announcing on the same channel: its changes are not this list's.
  const otherPrefix = newPrefix()
  t.teardown(() => dropKeys(otherPrefix))
  const other = await mirrored(t, otherPrefix, { channelPrefix: prefix })
  await Promise.all([a.store.mirrorReady(5000), b.store.mirrorReady(5000), other.store.mirrorReady(5000)])
  const before = { ...b.sent }
  t.equal(await b.store.contains('old-forever'), true, 'loaded at start (no expiry)')
  t.equal(await b.store.contains('old-long'), true, 'loaded at start (with expiry)')
  await new Promise((r) => setTimeout(r, 1100))
  t.equal(await b.store.contains('old-short'), false, 'a loaded entry expires with its Redis TTL')

  const delays: number[] = []
  for (let i = 0; i < 20; i++) {
    const jti = `j${i}`
    t.equal(await b.store.contains(jti), false)
    await a.store.add(jti, 60)
    // The promise is 100 ms; 1 s holds on a shared machine at load 15 (the max is printed below).
    delays.push(await within(1000, () => b.store.contains(jti), `${jti} listed on B`))
  }
  t.comment(`add on A → listed on B: max ${Math.max(...delays).toFixed(2)} ms over 20`)
  await other.store.add('j-other', 60)
  await a.store.remove('j0')
  await within(1000, async () => !(await b.store.contains('j0')), 'j0 unlisted on B')
  t.equal(await b.store.contains('j-other'), false, 'a change of another list is ignored')
  t.equal(await other.store.contains('j1'), false, 'and the other way round')
  t.same(since(before, b.sent), {}, 'B answered everything from its mirror')
  t.equal(b.store.mirrorState, 'on')
})

t.test('mirror: subscription lost → asks Redis; back → reloads, including changes it missed', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const proxy = await startProxy()
  const a = await mirrored(t, prefix)
  const b = await mirrored(t, prefix, { pubsubPort: proxy.port })
  await Promise.all([a.store.mirrorReady(5000), b.store.mirrorReady(5000)])
  await proxy.stop()
  await within(10_000, () => b.store.mirrorState === 'off', 'B notices the lost subscription')
  await a.store.add('missed', 60) // B's subscription is down: this announcement never reaches B
  let before = { ...b.sent }
  t.equal(await b.store.contains('missed'), true, 'refused meanwhile: asked Redis')
  t.same(since(before, b.sent), { exists: 1 }, 'one EXISTS, as without a mirror')
  const again = await startProxy(proxy.port)
  t.teardown(() => again.stop())
  await b.store.mirrorReady(5000)
  before = { ...b.sent }
  t.equal(await b.store.contains('missed'), true, 'reloaded: the missed revocation is in the mirror')
  t.equal(await b.store.contains('fine'), false)
  t.same(since(before, b.sent), {}, 'from memory again')
})

/** A proxy to Redis that can go silent: it keeps the sockets open but drops what they carry. */
async function silenceableProxy(): Promise<{ port: number; silence: () => void; stop: () => Promise<void> }> {
  let silent = false
  const sockets = new Set<net.Socket>()
  const server = net.createServer((inbound) => {
    const outbound = net.connect(6379, '127.0.0.1')
    sockets.add(inbound).add(outbound)
    inbound.on('data', (d) => silent || outbound.write(d))
    outbound.on('data', (d) => silent || inbound.write(d))
    const close = () => {
      inbound.destroy()
      outbound.destroy()
    }
    inbound.on('error', close).on('close', close)
    outbound.on('error', close).on('close', close)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    silence: () => {
      silent = true
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

t.test('mirror: a subscription gone silent (no reset) stops being trusted after maxSilenceMs', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const proxy = await silenceableProxy()
  t.teardown(() => proxy.stop())
  const a = await mirrored(t, prefix)
  const b = await mirrored(t, prefix, { pubsubPort: proxy.port, heartbeatMs: 20, maxSilenceMs: 100 })
  await Promise.all([a.store.mirrorReady(5000), b.store.mirrorReady(5000)])
  proxy.silence()
  // Without the heartbeat check it would never be distrusted: 5 s tells that from ~100 ms under any load.
  const ms = await within(5000, () => b.store.mirrorState === 'off', 'B distrusts its mirror')
  t.comment(`silent subscription distrusted after ${ms.toFixed(0)} ms (maxSilenceMs 100, heartbeat 20)`)
  t.equal(b.pubsub.connected, true, 'the connection itself still looks up')
  await a.store.add('unseen', 60)
  const before = { ...b.sent }
  t.equal(await b.store.contains('unseen'), true, 'refused: B asks Redis')
  t.equal(since(before, b.sent).exists, 1)
})

t.test('mirror: Redis unreachable for the store → 503 exactly as without a mirror', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const proxy = await startProxy()
  const a = await mirrored(t, prefix, { redisPort: proxy.port })
  await a.store.mirrorReady(5000)
  await a.store.add('j', 60)
  t.equal(await a.store.contains('j'), true)
  await proxy.stop()
  await within(10_000, () => a.client.status !== 'ready', 'client notices')
  for (const jti of ['j', 'other']) {
    await t.rejects(a.store.contains(jti), { code: 'TRV_SERVICE_UNAVAILABLE', statusCode: 503 }, jti)
  }
  await t.rejects(a.store.add('k', 5), { code: 'TRV_SERVICE_UNAVAILABLE', statusCode: 503 })
  const again = await startProxy(proxy.port)
  t.teardown(() => again.stop())
  await within(10_000, () => a.client.status === 'ready', 'client back')
  t.equal(await a.store.contains('j'), true, 'answers again without intervention')
})

t.test('mirror options are checked', async (t) => {
  const client = new Redis(REDIS_URL, { lazyConnect: true })
  const pubsub = new RedisPubSub({ redis: REDIS_URL, logger: { info() {}, warn() {}, error() {} } })
  t.teardown(async () => {
    await pubsub.close()
    client.disconnect()
  })
  const channel = new RedisChannel<unknown>('revocation-list', { pubsub, prefix: newPrefix() })
  t.throws(() => new RedisRevocationStore({ client, mirror: { channel: {} as never } }), {
    code: 'TRV_AUTH_MIRROR_CHANNEL',
    message: /mirror.channel must be a RedisChannel/,
  })
  t.throws(() => new RedisRevocationStore({ client, mirror: { channel, heartbeatMs: 0 } }), {
    code: 'TRV_AUTH_MIRROR_TIMING',
    message: /mirror.heartbeatMs must be a positive integer/,
  })
  t.throws(
    () => new RedisRevocationStore({ client, mirror: { channel, heartbeatMs: 500, maxSilenceMs: 100 } }),
    { code: 'TRV_AUTH_MIRROR_SILENCE', message: /maxSilenceMs must be at least heartbeatMs/ },
  )
  t.throws(
    () =>
      new RedisRevocationStore({ client: Object.assign(client, { nodes: () => [] }), mirror: { channel } }),
    {
      code: 'TRV_AUTH_MIRROR_SAME_REDIS',
      message:
        '@trivium/auth: on a Redis Cluster the mirror channel must be on the same Cluster (a RedisChannel whose RedisPubSub was given the Cluster)',
    },
  )
  const { evalsha: _, ...noScripts } = { evalsha: 1, status: 'ready', set() {}, exists() {}, del() {} }
  t.throws(() => new RedisRevocationStore({ client: noScripts as never, mirror: { channel } }), {
    code: 'TRV_AUTH_MIRROR_CLIENT',
    message: /the mirror needs an ioredis client \(missing evalsha\)/,
  })
})

t.test('mirror: the writer skips its own older announcements (remove then add at once)', async (t) => {
  const prefix = newPrefix()
  t.teardown(() => dropKeys(prefix))
  const client = new Redis(REDIS_URL, { enableOfflineQueue: false })
  const pubsub = new RedisPubSub({ redis: REDIS_URL, logger: { info() {}, warn() {}, error() {} } })
  const inner = new RedisChannel<unknown>('revocation-list', { pubsub, prefix })
  // Holds this store's list changes (heartbeats pass) until released, one by one.
  const held: unknown[] = []
  let deliver: (message: unknown) => void = () => {}
  const channel = {
    get channel() {
      return inner.channel
    },
    get subscribed() {
      return inner.subscribed
    },
    encode: (m: Parameters<typeof inner.encode>[0]) => inner.encode(m),
    onSubscriptionLost: (l: () => void) => inner.onSubscriptionLost(l),
    onResubscribed: (l: () => void) => inner.onResubscribed(l),
    subscribe(handler: (message: unknown) => void) {
      deliver = handler
      return inner.subscribe((m) => ((m as { op?: string }).op === 'ping' ? handler(m) : held.push(m)))
    },
  }
  const store = new RedisRevocationStore({ client, prefix, mirror: { channel } })
  t.teardown(async () => {
    await store.close()
    await pubsub.close()
    client.disconnect()
  })
  await store.mirrorReady(5000)
  await store.add('j', 60)
  await store.remove('j')
  await store.add('j', 60)
  await within(10_000, () => held.length === 3, 'the three announcements')
  t.same(
    held.map((m) => (m as { op: string }).op),
    ['add', 'remove', 'add'],
  )
  for (const message of held.splice(0)) {
    deliver(message)
    t.equal(await store.contains('j'), true, `still listed after its own ${(message as { op: string }).op}`)
  }
  await store.remove('j')
  await within(10_000, () => held.length === 1, 'the remove')
  deliver(held.pop())
  t.equal(await store.contains('j'), false, 'removed')
  t.equal(await client.exists(`${prefix}j`), 0)
})

t.test(
  'a heartbeat Redis delivered to nobody: the copy stops answering at once, not after maxSilenceMs',
  async (t) => {
    // The channel says it is subscribed, but Redis holds no subscription for it any more (on a Cluster:
    // the channel's slot moved to another node and the subscription has not followed yet). Announcements
    // are missed from then on; the heartbeat's PUBLISH answers 0 receivers, and that is enough.
    const prefix = newPrefix()
    t.teardown(() => dropKeys(prefix))
    const client = new Redis({ host: '127.0.0.1', port: 6379, enableOfflineQueue: false })
    client.on('error', () => {})
    const pubsub = new RedisPubSub({ redis: REDIS_URL, logger: { info() {}, warn() {}, error() {} } })
    const inner = new RedisChannel<unknown>('revocation-list', { pubsub, prefix })
    let offs: (() => void)[] = []
    const channel = {
      channel: inner.channel,
      subscribed: true,
      encode: (m: unknown) => inner.encode(m),
      subscribe: (handler: (m: unknown) => void) => {
        const off = inner.subscribe(handler)
        offs.push(off)
        return off
      },
      onSubscriptionLost: (l: () => void) => inner.onSubscriptionLost(l),
      onResubscribed: (l: () => void) => inner.onResubscribed(l),
    }
    const store = new RedisRevocationStore({
      client,
      prefix,
      mirror: { channel, heartbeatMs: 50, maxSilenceMs: 60_000 },
    })
    t.teardown(async () => {
      await store.close()
      await pubsub.close()
      client.disconnect()
    })
    await store.mirrorReady()
    t.equal(store.mirrorState, 'on')
    // The subscription disappears from Redis without the channel noticing.
    for (const off of offs) off()
    offs = []
    await within(10_000, () => store.mirrorState !== 'on', 'the copy distrusted (maxSilenceMs is 60 s)')
    // Revoked meanwhile by another writer: the lookup now asks Redis.
    await client.set(`${prefix}revoked-elsewhere`, '1')
    t.equal(await store.contains('revoked-elsewhere'), true, 'answered by Redis, not by the stale copy')
  },
)
