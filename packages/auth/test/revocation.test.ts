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
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
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
  await new Promise((r) => setTimeout(r, 100))
  await t.rejects(
    store.contains('j1'),
    { code: 'TRV_SERVICE_UNAVAILABLE', statusCode: 503 },
    'down: refuse, never "not revoked"',
  )
  const again = await startProxy(proxy.port)
  t.teardown(() => again.stop())
  const deadline = Date.now() + 5000
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
