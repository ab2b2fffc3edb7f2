// Operating the demo (issue 18): GET /metrics on by default (METRICS=false turns it off, METRICS_TOKEN
// protects it), readiness at /health/ready naming what is down, one access-log line per call on every
// transport without tokens (ACCESS_LOG=false turns it off).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectPglite } from '@trivium/sql'
import Fastify from 'fastify'
import t from 'tap'
import { readinessRoute } from '../dist/readiness.js'
import { backendConfig, startDemo } from './helpers.js'
import { PrivateRedis } from './scale-helpers.js'

t.test('GET /metrics is on in the demo and counts calls per endpoint and transport', async (t) => {
  const { app } = await startDemo(t)
  await app.inject('/health')
  await app.inject('/health')
  await app.inject({ url: '/auth/me' })
  const res = await app.inject('/metrics')
  t.equal(res.statusCode, 200)
  t.match(res.body, /\ntrivium_calls_total\{endpoint="health",transport="http",code="OK"\} 2\n/)
  t.match(
    res.body,
    /\ntrivium_calls_total\{endpoint="auth\.me",transport="http",code="TRV_UNAUTHORIZED"\} 1\n/,
  )
  // Auth publishes its failures on trivium:auth:failure; the metrics plugin counts them by reason.
  t.match(res.body, /\ntrivium_auth_failures_total\{reason="missing"\} 1\n/)
})

t.test('METRICS=false turns /metrics off; METRICS_TOKEN protects it', async (t) => {
  const off = await startDemo(t, { metrics: false })
  t.equal((await off.app.inject('/metrics')).statusCode, 404)
  const token = 'demo-metrics-token-0123456789'
  const guarded = await startDemo(t, { metricsToken: token })
  t.equal((await guarded.app.inject('/metrics')).statusCode, 401)
  const ok = await guarded.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } })
  t.equal(ok.statusCode, 200)
})

t.test('readiness: 200 when the database and Redis answer, 503 naming Redis when it is down', async (t) => {
  const redis = await PrivateRedis.create()
  t.teardown(() => redis.stop())
  const { app } = await startDemo(t, { ...backendConfig('postgres+redis'), redisUrl: redis.url })
  const ready = await app.inject('/health/ready')
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ready', checks: { database: 'up', databaseKind: 'postgres', redis: 'up' } })
  t.equal((await app.inject('/health')).statusCode, 200)
  await redis.stop()
  const down = await app.inject('/health/ready')
  t.equal(down.statusCode, 503)
  t.same(down.json(), {
    statusCode: 503,
    code: 'TRV_SERVICE_UNAVAILABLE',
    error: 'ServiceUnavailableException',
    message: 'Not ready: Redis is down',
    requestId: down.json().requestId,
    details: [{ field: 'redis', message: 'Redis is down' }],
  })
  t.equal((await app.inject('/health')).statusCode, 200, 'liveness does not depend on Redis')
})

t.test('metrics: the PostgreSQL pool of the demo is watched (trivium_pg_pool_connections)', async (t) => {
  const { app } = await startDemo(t, backendConfig('postgres+redis'))
  await app.inject('/health/ready') // uses a pooled connection
  const text = (await app.inject('/metrics')).body
  const total = /^trivium_pg_pool_connections\{state="total"\} (\d+)$/m.exec(text)
  t.ok(total, 'the total series is exposed')
  t.ok(Number(total?.[1]) >= 1, `at least one connection (${total?.[1]})`)
  t.match(text, /^trivium_pg_pool_connections\{state="idle"\} \d+$/m)
  t.match(text, /^trivium_pg_pool_connections\{state="waiting"\} 0$/m)
})

t.test('readiness: a closed database is named', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-ready-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const sql = await connectPglite({ dataDir: dir })
  await sql.close()
  const app = Fastify()
  readinessRoute(app, sql, undefined)
  const res = await app.inject('/health/ready')
  t.equal(res.statusCode, 503)
  t.equal(res.json().message, 'Not ready: the embedded database is down')
  t.same(res.json().details, [{ field: 'database', message: 'the embedded database is down' }])
})
