// Issue 30.1: RedisRevocationStore with `durable` (the database as the source of truth; README "Durable
// source"). A private redis-server that the test restarts empty, a proxy that holds the bytes of one
// writer's Redis connection, PostgreSQL in a schema of its own.
import { randomBytes } from 'node:crypto'
import { RedisRevocationStore } from '@trivium/auth'
import { migrateAuth, SqlRevocationStore } from '@trivium/auth/sql'
import { RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { connectPostgres } from '@trivium/sql'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { freePort, holdingProxy, startRedis } from './redis-process.js'

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const PREFIX = 'durable:blacklist:token:'

async function within(timeoutMs: number, check: () => Promise<boolean> | boolean, what: string) {
  const end = Date.now() + waitBound(timeoutMs)
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

function instance(
  t: Test,
  durable: SqlRevocationStore,
  clientPort: number,
  pubsubPort: number,
  pollMs: number,
) {
  const client = new Redis({
    host: '127.0.0.1',
    port: clientPort,
    enableOfflineQueue: false,
    retryStrategy: () => 50,
  })
  client.on('error', () => {})
  const pubsub = new RedisPubSub({
    redis: `redis://127.0.0.1:${pubsubPort}`,
    logger: { info() {}, warn() {}, error() {} },
    retryMaxDelayMs: 50,
  })
  const store = new RedisRevocationStore({
    client,
    prefix: PREFIX,
    commandTimeoutMs: 300,
    durable,
    mirror: {
      channel: new RedisChannel('revocation-list', { pubsub }),
      heartbeatMs: 50,
      // Long enough that a loaded machine's stalls do not look like a silent subscription (which would
      // make B reload from the database and hear of what the tests say it has not heard of yet).
      maxSilenceMs: 2000,
      pollMs,
    },
  })
  t.teardown(async () => {
    await store.close()
    await pubsub.close()
    client.disconnect()
  })
  return { client, store }
}

t.test('durable source: the database keeps the list, Redis and the mirrors are copies', async (t) => {
  const port = await freePort()
  let redis = await startRedis(port)
  t.teardown(() => {
    redis.kill('SIGKILL')
  })
  const schema = `test_${randomBytes(6).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 4 })
  t.teardown(async () => {
    await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.close()
  })
  await migrateAuth(sql)
  const durable = new SqlRevocationStore({ client: sql })
  const proxy = await holdingProxy(port)
  t.teardown(() => proxy.close())
  const direct = new Redis({ port, retryStrategy: () => 50 })
  direct.on('error', () => {})
  t.teardown(() => direct.disconnect())
  // A writes through the proxy; B is direct.
  // A writes through the proxy; B is direct and does not poll the database (for 60 s).
  const a = instance(t, durable, proxy.port, port, 60_000)
  const b = instance(t, durable, port, port, 60_000)
  let reloads = 0
  const reloadedWith: string[] = []
  b.store.onMirrorReload((isListed) => {
    reloads++
    for (const jti of ['r1', 'x', 'y']) if (isListed(jti)) reloadedWith.push(jti)
  })
  await Promise.all([a.store.mirrorReady(10_000), b.store.mirrorReady(10_000)])
  t.equal(reloads, 1, 'the first load counts as a reload')

  await t.test('stored in the database first; Redis restarted empty; the copy rebuilt', async (t) => {
    await a.store.add('r1', 600)
    t.equal(await durable.contains('r1'), true, 'in the database')
    t.equal(await direct.exists(`${PREFIX}r1`), 1, 'in Redis')
    await within(10_000, () => b.store.contains('r1'), 'B refuses r1')
    const before = /run_id:(\w+)/.exec(await direct.info('server'))![1]
    redis.kill('SIGKILL')
    await new Promise((r) => redis.once('exit', r))
    redis = await startRedis(port)
    // A new server without persistence (--save ''): it came back empty. (Not read from its keys: the
    // instances may already have rebuilt the copy by the time this test asks.)
    t.not(
      /run_id:(\w+)/.exec(await direct.info('server'))![1],
      before,
      'Redis came back as a new, empty server',
    )
    // Every lookup meanwhile: listed, or 503 — never "not listed".
    const seen = new Set<string>()
    const end = Date.now() + waitBound(10_000)
    while (Date.now() < end && b.store.mirrorState !== 'on') {
      seen.add(String(await b.store.contains('r1').catch((err) => err.statusCode)))
      await new Promise((r) => setTimeout(r, 5))
    }
    t.notOk(seen.has('false'), `B never answered "not listed" (${[...seen].join(', ')})`)
    t.equal(await b.store.contains('r1'), true)
    const runId = /run_id:(\w+)/.exec(await direct.info('server'))![1]
    // The marker is written after the entries: wait for both.
    await within(
      10_000,
      async () => (await direct.exists(`${PREFIX}r1`)) === 1 && (await direct.get(PREFIX)) === runId,
      'the Redis key is rebuilt, then marked',
    )
    // (The wait above saw the marker name this server. A rebuild that began before the restart, on a loaded
    // machine, may still write the old server's id after it: readers then distrust the copy and rebuild it
    // again, as the failover case below checks; so the marker is not read a second time here.)
    const pttl = await direct.pttl(`${PREFIX}r1`)
    t.ok(pttl > 570_000 && pttl <= 600_000, `with the remaining lifetime (${pttl} ms)`)
    t.ok(reloadedWith.includes('r1'), 'B reloaded from the database and told its listener')
    // A replica promoted after a failover holds the old server's marker, and may lack the last entries.
    // A rebuild still running from the restart above (the other instance's, on a loaded machine) can
    // write its marker after this one, hiding the simulated failover: then it is simulated again.
    let rebuilt = false
    for (let attempt = 1; attempt <= 5 && !rebuilt; attempt++) {
      await direct.set(PREFIX, 'the-run-id-of-another-server')
      await direct.del(`${PREFIX}r1`)
      rebuilt = await within(
        5000,
        async () => (await direct.exists(`${PREFIX}r1`)) === 1 && (await direct.get(PREFIX)) === runId,
        'rebuilt and marked again',
      ).then(
        () => true,
        () => false,
      )
    }
    t.ok(rebuilt, 'rebuilt: the marker named another server')
    t.equal(await direct.get(PREFIX), runId, 'marked again')
  })

  await t.test('Redis fails after the database took the change: 503, then retried', async (t) => {
    await a.store.mirrorReady(10_000)
    proxy.hold()
    await t.rejects(a.store.add('x', 600), { statusCode: 503, code: 'TRV_SERVICE_UNAVAILABLE' })
    t.equal(await durable.contains('x'), true, 'the database has it')
    t.equal(await a.store.contains('x'), true, 'A refuses it at once')
    t.equal(await b.store.contains('x'), false, 'B has not heard of it')
    proxy.drop() // the script never reached Redis
    await within(10_000, () => b.store.contains('x'), 'the announcement is retried and reaches B')
  })

  await t.test(
    '... and its writer dies before Redis is back: the others find it in the database',
    async (t) => {
      // C polls the database every 300 ms.
      const c = instance(t, durable, port, port, 300)
      await c.store.mirrorReady(10_000)
      const listed: string[] = []
      c.store.onMirrorReload((isListed) => {
        if (isListed('y')) listed.push('y')
      })
      proxy.hold()
      await t.rejects(a.store.add('y', 600), { statusCode: 503, code: 'TRV_SERVICE_UNAVAILABLE' })
      // A dies: no retry will come from it, and its connection goes with it. (A live ioredis client would
      // send the timed-out script again once the proxy's reset makes it reconnect: its
      // autoResendUnfulfilledCommands. That is what made B hear of y, once in a few runs.)
      await a.store.close()
      a.client.disconnect()
      proxy.drop() // the script never reached Redis
      await within(10_000, () => c.store.contains('y'), 'C finds y in its poll of the database')
      t.same(listed, ['y'], 'and tells its listener')
      // The announcement never went out: B, which does not poll yet, has not heard of it.
      t.equal(await b.store.contains('y'), false, 'B, before its next poll, has not')
    },
  )

  await t.test('Redis frozen (SIGSTOP): never "not listed"; answered from the database', async (t) => {
    await b.store.mirrorReady(10_000)
    // Issue 44.2: a lookup that finds a jti listed outside the copy tells the listeners (they close its
    // sessions); one answered by the trusted copy does not (its announcement already did).
    const found: string[] = []
    const off = b.store.onListedFound((jti) => found.push(jti))
    t.teardown(off)
    t.equal(await b.store.contains('r1'), true, 'listed: answered by the copy')
    t.same(found, [], 'a lookup answered by the trusted copy tells no listener')
    redis.kill('SIGSTOP')
    t.teardown(() => {
      redis.kill('SIGCONT')
    })
    const seen = new Set<string>()
    // Until the frozen copy is distrusted and the lookups go to the database.
    await within(
      10_000,
      async () => {
        seen.add(String(await b.store.contains('r1').catch((err) => err.statusCode)))
        return b.store.mirrorState !== 'on'
      },
      'the copy is distrusted',
    )
    found.length = 0
    t.equal(await b.store.contains('r1'), true, 'listed: asked the database')
    t.same(found, ['r1'], 'the listeners are told the jti the database listed')
    t.equal(await b.store.contains('never-listed'), false, 'not listed: asked the database')
    t.same(found, ['r1'], 'not told of a jti that is not listed')
    t.notOk(seen.has('false'), `never "not listed" meanwhile (${[...seen].join(', ')})`)
    redis.kill('SIGCONT')
    await b.store.mirrorReady(10_000)
    t.equal(await b.store.contains('r1'), true, 'from the reloaded copy')
  })

  await t.test('options are checked', async (t) => {
    t.throws(() => new RedisRevocationStore({ client: b.client, durable }), {
      code: 'TRV_AUTH_DURABLE_MIRROR',
      message: /durable needs the mirror option/,
    })
    t.throws(() => new RedisRevocationStore({ client: b.client, durable: {} as never }), {
      code: 'TRV_AUTH_DURABLE',
      message: /durable must be a SqlRevocationStore/,
    })
  })
})
