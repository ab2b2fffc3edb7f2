// The revocation list (mirror + database, the demo's configuration) on a Redis Cluster of 3 primaries
// with a replica each, started by the test: the primary holding the list's slot (and its shard channel)
// is killed. While the replica is promoted no revoked token is answered "not listed" (503 or the database),
// a revocation made meanwhile is not lost, and afterwards both instances answer from their copies again,
// the subscription has followed the slot to the new primary and the copy there is marked with its run id.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { RedisRevocationStore } from '@trivium/auth'
import { migrateAuth, SqlRevocationStore } from '@trivium/auth/sql'
import { RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { connectPostgres } from '@trivium/sql'
import { Cluster } from 'ioredis'
import t from 'tap'
import { ownerOf, startCluster } from '../../../scripts/redis-cluster.mjs'
import { waitBound } from '../../../scripts/test/waits.js'

const PORTS = [17440, 17441, 17442, 17443, 17444, 17445]
const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

async function within(timeoutMs: number, check: () => Promise<boolean> | boolean, what: string) {
  const end = Date.now() + waitBound(timeoutMs)
  while (
    !(await Promise.resolve()
      .then(check)
      .catch(() => false))
  ) {
    if (Date.now() > end) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

t.test(
  'the primary of the list’s slot fails over: fail closed meanwhile, nothing lost, copies back',
  async (t) => {
    const redis = await startCluster({ ports: PORTS, replicas: 1 })
    t.teardown(() => redis.stop())
    const schema = `test_${randomBytes(6).toString('hex')}`
    const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 4 })
    t.teardown(async () => {
      await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await sql.close()
    })
    await migrateAuth(sql)
    const durable = new SqlRevocationStore({ client: sql })
    const prefix = `test_${randomBytes(6).toString('hex')}:blacklist:token:`
    const quiet = { info() {}, warn() {}, error() {} }
    const instance = async () => {
      const client = new Cluster(redis.nodes, { enableOfflineQueue: false })
      client.on('error', () => {})
      await once(client, 'ready')
      const pubsub = new RedisPubSub({ redis: client, logger: quiet })
      const store = new RedisRevocationStore({
        client,
        prefix,
        durable,
        mirror: {
          channel: new RedisChannel('revocation-list', { pubsub }),
          heartbeatMs: 50,
          maxSilenceMs: 2000,
        },
      })
      t.teardown(async () => {
        await store.close()
        await pubsub.close()
        client.disconnect()
      })
      return store
    }
    const a = await instance()
    const b = await instance()
    await Promise.all([a.mirrorReady(), b.mirrorReady()])
    await a.add('before', 600)
    await within(10_000, () => b.contains('before'), 'b hears of the revocation')

    const marker = a.keyPrefix
    const { port: primary } = await ownerOf(PORTS[0]!, marker)
    const alive = PORTS.find((p) => p !== primary)!
    const answers = new Set<string>()
    let watching = true
    t.teardown(() => {
      watching = false
    })
    const watch = (async () => {
      while (watching) {
        for (const store of [a, b]) {
          answers.add(String(await store.contains('before').catch((err) => err.statusCode)))
        }
        await new Promise((r) => setTimeout(r, 5))
      }
    })()
    const killedAt = Date.now()
    await redis.kill(primary)
    // Revoked while the replica is being promoted: stored in the database first; the Redis part may fail (503).
    const during = await a.add('during', 600).then(
      () => 'stored',
      (err) => String(err.statusCode),
    )
    await within(
      30_000,
      async () =>
        (await ownerOf(alive, marker)).port !== primary &&
        (await redis.cli(alive, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
      'the replica promoted',
    )
    const { port: promoted } = await ownerOf(alive, marker)
    await within(30_000, () => a.mirrorState === 'on' && b.mirrorState === 'on', 'both copies answer again')
    t.comment(
      `primary killed → both copies answering again: ${Date.now() - killedAt} ms (cluster-node-timeout 2000)`,
    )
    watching = false
    await watch
    t.notOk(
      answers.has('false'),
      `the revoked token was never answered "not listed" (answers: ${[...answers].join(', ')})`,
    )
    t.ok(['stored', '503'].includes(during), `a revocation during the failover: ${during}`)
    t.same(
      await Promise.all([
        a.contains('during'),
        b.contains('during'),
        a.contains('before'),
        b.contains('before'),
      ]),
      [true, true, true, true],
      'both revocations refused by both instances from their copies',
    )
    const runId = /run_id:(\w+)/.exec(await redis.cli(promoted, 'INFO', 'server'))![1]
    await within(
      10_000,
      async () => (await redis.cli(promoted, 'GET', marker)).trim() === runId,
      'the new primary’s marker',
    )
    t.pass('the copy on the new primary is marked with its run id')
    t.equal(
      await redis.cli(promoted, 'EXISTS', `${marker}during`),
      '1\n',
      'the revocation made during the failover is in it',
    )
    const shardChannels = (await redis.cli(promoted, 'PUBSUB', 'SHARDCHANNELS')).trim().split('\n')
    t.ok(
      shardChannels.includes('trivium:revocation-list'),
      'the subscriptions followed the slot to the new primary',
    )
    await a.add('after', 600)
    await within(
      10_000,
      () => b.contains('after'),
      'a revocation after the failover reaches the other instance',
    )
    t.pass('a revocation after the failover reaches the other instance')
  },
)
