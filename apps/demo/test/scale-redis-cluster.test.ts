// Issue 32: the demo on a Redis Cluster (REDIS_CLUSTER_NODES, three primaries the test starts). Two
// instances: readiness names the topology; a logout on one is refused on the other and closes a
// WebSocket session there (the revocation list and the event bus on sharded pub/sub); rate limits are
// shared; a node that is not a cluster node, or a cluster node given as REDIS_URL's peer, is refused in
// one line. The packages' own Cluster behaviour (hash tags, MOVED/ASK, exact counts) is tested in
// packages/*/test/*cluster*.test.ts.
import { once } from 'node:events'
import t from 'tap'
import { startCluster } from '../../../scripts/redis-cluster.mjs'
import { rangePort, startFailing } from './redis-topology-helpers.js'
import {
  api,
  dropBackend,
  type Instance,
  login,
  newBackend,
  PrivateRedis,
  registerAndLogin,
  startProcess,
  until,
  WebSocket,
} from './scale-helpers.js'

const REVOKED = 'Token has been revoked'
const METRICS_TOKEN = 'cluster-test-metrics-token-0123'
t.setTimeout(5 * 60_000)

t.test('two instances on a Redis Cluster', async (t) => {
  const cluster = await startCluster({ ports: [await rangePort(), await rangePort(), await rangePort()] })
  t.teardown(() => cluster.stop())
  const backend = newBackend()
  const env = {
    DATABASE_URL: backend.databaseUrl,
    DATABASE_SCHEMA: backend.schema,
    REDIS_PREFIX: backend.prefix,
    REDIS_CLUSTER_NODES: cluster.nodes.map((n) => `${n.host}:${n.port}`).join(','),
    METRICS_TOKEN,
    RATE_LIMITS: 'auth.me=7/60s',
  }

  await t.test('a node that is not a cluster node is refused in one line', async (t) => {
    const plain = await PrivateRedis.create()
    t.teardown(() => plain.close())
    const run = await startFailing({ ...env, REDIS_CLUSTER_NODES: `127.0.0.1:${plain.port}` })
    t.equal(run.code, 1)
    t.equal(
      run.output,
      `Trivium Tasks failed to start: REDIS_CLUSTER_NODES: 127.0.0.1:${plain.port} is not a cluster node (ERR This instance has cluster support disabled) — for one Redis use REDIS_URL\n`,
    )
  })

  const instances: Instance[] = []
  t.teardown(async () => {
    await Promise.all(instances.map((i) => i.stop()))
    await dropBackend(backend, 'redis://127.0.0.1:1') // the cluster's keys go with its processes
  })
  for (const name of ['A', 'B']) instances.push(await startProcess(name, env))
  const [a, b] = instances as [Instance, Instance]

  const ready = await api(b.base, 'GET', '/health/ready', { token: METRICS_TOKEN })
  t.same(ready.body, {
    status: 'ready',
    checks: {
      database: 'up',
      databaseKind: 'postgres',
      redis: 'up',
      redisTopology: 'cluster',
      redisTls: false,
    },
  })
  t.same((await api(b.base, 'GET', '/health/ready')).body, { status: 'ready' }, 'anyone: up only')

  const { tokens } = await registerAndLogin(a.base, 'clara')
  // Revocation across instances, and the session on B closed by a logout on A.
  const session = await login(a.base, 'clara')
  const ws = new WebSocket(`ws://127.0.0.1:${b.http}/ws?token=${session.accessToken}&format=json`)
  await once(ws, 'open')
  const closed = once(ws, 'close')
  t.equal((await api(a.base, 'POST', '/auth/logout', { token: session.accessToken, body: {} })).status, 200)
  const refused = await until(async () => {
    const res = await api(b.base, 'GET', '/auth/me', { token: session.accessToken })
    return res.status === 401 && res.body.message === REVOKED
  }, 5000)
  t.ok(refused, 'the token revoked on A is refused on B')
  const timer = setTimeout(() => ws.terminate(), 10_000)
  const [code, reason] = (await closed) as [number, Buffer]
  clearTimeout(timer)
  t.same([code, reason.toString()], [4001, REVOKED], 'the session on B is closed (sharded pub/sub)')

  // One limit across both instances: 7 per minute for auth.me, counted on the cluster.
  const statuses: number[] = []
  for (let n = 0; n < 10; n++)
    statuses.push(
      (await api(n % 2 ? a.base : b.base, 'GET', '/auth/me', { token: tokens.accessToken })).status,
    )
  t.same(
    [statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 429).length],
    [7, 3],
    'auth.me: 7 allowed across the two instances, then 429',
  )
})
