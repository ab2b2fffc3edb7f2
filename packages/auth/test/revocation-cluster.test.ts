// RedisRevocationStore on a Redis Cluster of 3 primaries the test starts (scripts/redis-cluster.mjs):
// without the mirror the keys `<prefix><jti>` spread over the nodes; with the mirror (sharded pub/sub)
// the list lives in the slot of its channel (`{<channel>}<prefix><jti>`) so each add/remove script
// touches one slot; with the database as the source of truth the marker names the run id of the node
// owning that slot; a migration of the list's slot under load costs retries, not errors.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { RedisRevocationStore } from '@trivium/auth'
import { migrateAuth, SqlRevocationStore } from '@trivium/auth/sql'
import { RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { connectPostgres } from '@trivium/sql'
import { Cluster } from 'ioredis'
import t from 'tap'
import { migrateSlot, ownerOf, startCluster } from '../../../scripts/redis-cluster.mjs'
import { waitBound } from '../../../scripts/test/waits.js'

const PORTS = [17420, 17421, 17422]
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const redis = await startCluster({ ports: PORTS })
t.teardown(() => redis.stop())

async function within(timeoutMs: number, check: () => Promise<boolean> | boolean, what: string) {
  const end = Date.now() + waitBound(timeoutMs)
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

async function cluster(): Promise<Cluster> {
  const client = new Cluster(redis.nodes, { enableOfflineQueue: false })
  client.on('error', () => {})
  t.teardown(() => client.disconnect())
  await once(client, 'ready')
  return client
}

const quiet = { info() {}, warn() {}, error() {} }

/** An instance: its own Cluster client and pub/sub, a store with a mirror on `channelName`. */
async function instance(prefix: string, channelName: string, durable?: SqlRevocationStore) {
  const client = await cluster()
  const pubsub = new RedisPubSub({ redis: client, logger: quiet })
  const channel = new RedisChannel(channelName, { pubsub })
  const store = new RedisRevocationStore({
    client,
    prefix,
    // Generous: on a loaded machine a slow reply must not count as a failure of the migration.
    commandTimeoutMs: 10_000,
    durable,
    mirror: { channel, heartbeatMs: 50, maxSilenceMs: 2000 },
  })
  t.teardown(async () => {
    await store.close()
    await pubsub.close()
  })
  return { client, store, channel }
}

t.test('without the mirror: two instances, entries on different nodes', async (t) => {
  const prefix = `test_${randomBytes(6).toString('hex')}:blacklist:token:`
  const a = new RedisRevocationStore({ client: await cluster(), prefix })
  const b = new RedisRevocationStore({ client: await cluster(), prefix })
  const jtis = Array.from({ length: 12 }, (_, i) => `jti-${i}`)
  for (const jti of jtis) await a.add(jti, 60)
  const owners = new Set(
    await Promise.all(jtis.map(async (j) => (await ownerOf(PORTS[0]!, prefix + j)).port)),
  )
  t.equal(owners.size, 3, 'the keys `<prefix><jti>` spread over the three nodes')
  const seen = await Promise.all(jtis.map((jti) => b.contains(jti)))
  t.same(
    seen,
    jtis.map(() => true),
    'every entry revoked on the other instance',
  )
  t.equal(await b.contains('never-revoked'), false)
  await b.remove('jti-3')
  t.equal(await a.contains('jti-3'), false)
  const { port } = await ownerOf(PORTS[0]!, `${prefix}jti-0`)
  const ttl = Number(await redis.cli(port, 'TTL', `${prefix}jti-0`))
  t.ok(ttl > 0 && ttl <= 60, 'the entry expires by the Redis TTL')
})

t.test(
  'with the mirror: one slot per script, sharded announcements, both instances answer from memory',
  async (t) => {
    const prefix = `test_${randomBytes(6).toString('hex')}:blacklist:token:`
    const name = `revocation-list-${randomBytes(4).toString('hex')}`
    const a = await instance(prefix, name)
    const b = await instance(prefix, name)
    t.equal(a.store.keyPrefix, `{trivium:${name}}${prefix}`, 'the list lives in the slot of its channel')
    await Promise.all([a.store.mirrorReady(), b.store.mirrorReady()])
    await a.store.add('one', 60)
    await a.store.add('two')
    await within(
      5000,
      async () => (await b.store.contains('one')) && (await b.store.contains('two')),
      'announced to b',
    )
    const { port } = await ownerOf(PORTS[0]!, `trivium:${name}`)
    t.equal(
      await redis.cli(port, 'GET', `${a.store.keyPrefix}one`),
      '1\n',
      'the entry is on the channel’s node',
    )
    const shardChannels = (await redis.cli(port, 'PUBSUB', 'SHARDCHANNELS')).trim().split('\n')
    t.ok(shardChannels.includes(`trivium:${name}`), 'the announcements travel as a shard channel')
    await b.store.remove('one')
    await within(5000, async () => !(await a.store.contains('one')), 'the removal announced to a')
    // A third instance loads the list from the cluster (SCAN on the primaries).
    const c = await instance(prefix, name)
    await c.store.mirrorReady()
    t.equal(c.store.mirrorState, 'on')
    t.equal(await c.store.contains('two'), true, 'loaded by a new instance')
    t.equal(await c.store.contains('one'), false)
  },
)

t.test(
  'durable source on a cluster: the copy is marked with the run id of its node and rebuilt after a migration',
  async (t) => {
    const schema = `test_${randomBytes(6).toString('hex')}`
    const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 4 })
    t.teardown(async () => {
      await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await sql.close()
    })
    await migrateAuth(sql)
    const durable = new SqlRevocationStore({ client: sql })
    const prefix = `test_${randomBytes(6).toString('hex')}:blacklist:token:`
    const name = `revocation-list-${randomBytes(4).toString('hex')}`
    const a = await instance(prefix, name, durable)
    const b = await instance(prefix, name, durable)
    await Promise.all([a.store.mirrorReady(), b.store.mirrorReady()])
    const marker = a.store.keyPrefix
    const { slot, port: from } = await ownerOf(PORTS[0]!, marker)
    const runId = async (port: number) => /run_id:(\w+)/.exec(await redis.cli(port, 'INFO', 'server'))![1]
    await within(
      5000,
      async () => (await redis.cli(from, 'GET', marker)).trim() === (await runId(from)),
      'the marker',
    )
    t.pass('the marker holds the run id of the node owning the list’s slot')

    // Revocations and lookups under way on both instances while the slot moves to another node.
    const to = PORTS.find((p) => p !== from)!
    const failures: unknown[] = []
    const revoked: string[] = []
    let running = true
    let n = 0
    const load = async (store: RedisRevocationStore) => {
      while (running) {
        const jti = `load-${++n}`
        try {
          await store.add(jti, 300)
          revoked.push(jti)
          await store.contains(jti)
        } catch (err) {
          failures.push(err)
        }
      }
    }
    const loads = [load(a.store), load(b.store)]
    await within(5000, () => revoked.length >= 20, 'load before the move')
    await migrateSlot({ slot, fromPort: from, toPort: to, allPorts: PORTS })
    const mark = revoked.length
    await within(10_000, () => revoked.length >= mark + 20, 'load after the move')
    running = false
    await Promise.all(loads)
    t.same(failures, [], `no add or lookup failed (${revoked.length} revocations during the migration)`)
    await within(
      10_000,
      async () => (await redis.cli(to, 'GET', marker)).trim() === (await runId(to)),
      'the marker of the new node',
    )
    t.pass('the copy was rebuilt on the new owner and marked with its run id')
    const exists = await Promise.all(revoked.map((jti) => redis.cli(to, 'EXISTS', `${marker}${jti}`)))
    t.same(
      exists,
      revoked.map(() => '1\n'),
      'every revocation is in the copy on the new node',
    )
    await within(
      10_000,
      async () => {
        for (const jti of revoked)
          if (!(await a.store.contains(jti)) || !(await b.store.contains(jti))) return false
        return true
      },
      'every revocation refused by both instances',
    )
    t.pass('every revocation refused by both instances')
  },
)

t.test('a mirror channel on another Redis than the client is refused', async (t) => {
  const client = await cluster()
  const pubsub = new RedisPubSub({ redis: 'redis://127.0.0.1:6379', logger: quiet })
  t.teardown(() => pubsub.close())
  t.throws(
    () => new RedisRevocationStore({ client, mirror: { channel: new RedisChannel('x', { pubsub }) } }),
    {
      message:
        '@trivium/auth: on a Redis Cluster the mirror channel must be on the same Cluster (a RedisChannel whose RedisPubSub was given the Cluster)',
    },
  )
})
