// Operating the demo (issue 18): GET /metrics on by default (METRICS=false turns it off), readiness at
// /health/ready, one access-log line per call on every transport without tokens (ACCESS_LOG=false turns
// it off). Issue 29 item 5: /metrics and readiness's checks are for operators only (METRICS_TOKEN or a
// live admin); anyone else learns up or down (never rate limited: probes.test.ts).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectPglite } from '@trivium/sql'
import Fastify from 'fastify'
import t from 'tap'
import { readinessRoute } from '../dist/readiness.js'
import { ADMIN, backendConfig, copyInitdb, registerAndLogin, startDemo } from './helpers.js'
import { PrivateRedis } from './scale-helpers.js'

const METRICS_TOKEN = 'demo-metrics-token-0123456789'
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

async function adminToken(app: Awaited<ReturnType<typeof startDemo>>['app']): Promise<string> {
  return (await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })).json().accessToken
}

async function listening(app: Awaited<ReturnType<typeof startDemo>>['app']): Promise<string> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

t.test('GET /metrics is on in the demo and counts calls per endpoint and transport', async (t) => {
  const { app } = await startDemo(t)
  await app.inject('/health')
  await app.inject('/health')
  await app.inject({ url: '/auth/me' })
  // Without METRICS_TOKEN an admin's access token is the only way in.
  t.equal((await app.inject('/metrics')).statusCode, 401)
  t.equal((await app.inject({ url: '/metrics', headers: bearer(METRICS_TOKEN) })).statusCode, 401)
  const res = await app.inject({ url: '/metrics', headers: bearer(await adminToken(app)) })
  t.equal(res.statusCode, 200)
  t.match(res.body, /\ntrivium_calls_total\{endpoint="health",transport="http",code="OK"\} 2\n/)
  t.match(
    res.body,
    /\ntrivium_calls_total\{endpoint="auth\.me",transport="http",code="TRV_UNAUTHORIZED"\} 1\n/,
  )
  // Auth publishes its failures on trivium:auth:failure; the metrics plugin counts them by reason.
  t.match(res.body, /\ntrivium_auth_failures_total\{reason="missing"\} 1\n/)
})

t.test(
  '/metrics by default: anonymous 401, a non-admin 403, METRICS_TOKEN or a live admin 200',
  async (t) => {
    const { app } = await startDemo(t, { metricsToken: METRICS_TOKEN })
    const base = await listening(app)
    const alice = await registerAndLogin(app, 'alice')
    const admin = await adminToken(app)
    const scrape = (headers: Record<string, string> = {}) => fetch(`${base}/metrics`, { headers })
    const unauthorized = {
      statusCode: 401,
      code: 'TRV_UNAUTHORIZED',
      error: 'UnauthorizedException',
      message: 'Metrics need a valid bearer token',
    }
    for (const [label, headers] of [
      ['no credential', {}],
      ['a wrong token', bearer('demo-metrics-token-0123456788')],
      ['a forged access token', bearer(`${alice.tokens.accessToken.slice(0, -4)}AAAA`)],
    ] as const) {
      const res = await scrape(headers)
      t.equal(res.status, 401, label)
      t.equal(res.headers.get('www-authenticate'), 'Bearer', label)
      const body = await res.json()
      t.same(body, { ...unauthorized, requestId: body.requestId }, label)
    }
    const member = await scrape(bearer(alice.tokens.accessToken))
    t.equal(member.status, 403)
    const body = await member.json()
    t.same(body, {
      statusCode: 403,
      code: 'TRV_FORBIDDEN',
      error: 'ForbiddenException',
      message: 'Insufficient roles. Required: admin',
      requestId: body.requestId,
    })
    for (const [label, token] of [
      ['METRICS_TOKEN', METRICS_TOKEN],
      ['an admin', admin],
    ] as const) {
      const res = await scrape(bearer(token))
      t.equal(res.status, 200, label)
      t.match(await res.text(), /^# HELP trivium_calls_total /m, label)
    }

    // On the same demo (one start fewer for the suite).
    await t.test(
      '/metrics shows the process: resident memory, heap, event-loop lag, handles (issue 44)',
      async (t) => {
        const res = await scrape(bearer(METRICS_TOKEN))
        t.equal(res.status, 200)
        const text = await res.text()
        t.match(text, /^process_resident_memory_bytes [1-9]\d*$/m)
        t.match(text, /^nodejs_heap_size_used_bytes [1-9]\d*$/m)
        t.match(text, /^nodejs_eventloop_lag_seconds \d[\d.e-]*$/m)
        t.match(
          text,
          /^nodejs_active_handles\{type="Server"\} [1-9]\d*$/m,
          'the listening server is a handle',
        )
      },
    )
  },
)

t.test('METRICS=false turns /metrics off; METRICS_LISTEN moves it to an address of its own', async (t) => {
  const off = await startDemo(t, { metrics: false, metricsListen: { host: '127.0.0.1', port: 0 } })
  t.equal((await off.app.inject('/metrics')).statusCode, 404)
  t.equal(off.app.metrics.address(), undefined, 'no separate server either')
  const apart = await startDemo(t, { metricsListen: { host: '127.0.0.1', port: 0 } })
  const base = await listening(apart.app)
  t.equal((await fetch(`${base}/metrics`)).status, 404, 'not on the API port')
  t.equal((await fetch(`${base}/admin/metrics`)).status, 404, 'nor the page that scrapes it there')
  const address = apart.app.metrics.address()
  // Only the scraper reaches that address (the deployment's network decides): it asks no credential.
  const res = await fetch(`http://127.0.0.1:${address?.port}/metrics`)
  t.equal(res.status, 200)
  t.match(await res.text(), /^# HELP trivium_calls_total /m)
})

t.test(
  'readiness: up/down for anyone, the checks for operators; 503 naming Redis when it is down',
  async (t) => {
    const redis = await PrivateRedis.create()
    t.teardown(() => redis.stop())
    const { app } = await startDemo(t, {
      ...backendConfig('postgres+redis'),
      redisUrl: redis.url,
      metricsToken: METRICS_TOKEN,
    })
    const base = await listening(app)
    const alice = await registerAndLogin(app, 'alice')
    const admin = await adminToken(app)
    const ready = (headers: Record<string, string> = {}) => fetch(`${base}/health/ready`, { headers })
    const checks = {
      database: 'up',
      databaseKind: 'postgres',
      redis: 'up',
      redisTopology: 'single',
      redisTls: false,
    }
    for (const [label, headers, expected] of [
      ['anonymous', {}, { status: 'ready' }],
      ['a member', bearer(alice.tokens.accessToken), { status: 'ready' }],
      ['a wrong token', bearer('not-a-token'), { status: 'ready' }],
      ['METRICS_TOKEN', bearer(METRICS_TOKEN), { status: 'ready', checks }],
      ['an admin', bearer(admin), { status: 'ready', checks }],
    ] as const) {
      const res = await ready(headers)
      t.equal(res.status, 200, label)
      t.same(await res.json(), expected, label)
    }
    // On the same demo (one start fewer for the suite), while Redis is up.
    await t.test(
      'metrics: the PostgreSQL pool of the demo is watched (trivium_pg_pool_connections)',
      async (t) => {
        await app.inject('/health/ready') // uses a pooled connection
        const text = (await app.inject({ url: '/metrics', headers: bearer(admin) })).body
        const total = /^trivium_pg_pool_connections\{state="total"\} (\d+)$/m.exec(text)
        t.ok(total, 'the total series is exposed')
        t.ok(Number(total?.[1]) >= 1, `at least one connection (${total?.[1]})`)
        t.match(text, /^trivium_pg_pool_connections\{state="idle"\} \d+$/m)
        t.match(text, /^trivium_pg_pool_connections\{state="waiting"\} 0$/m)
      },
    )
    t.equal((await app.inject('/health')).statusCode, 200)
    await redis.stop()
    const down = await ready()
    t.equal(down.status, 503)
    const anonymous = await down.json()
    t.same(anonymous, {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: 'Not ready',
      requestId: anonymous.requestId,
    })
    const named = await ready(bearer(METRICS_TOKEN))
    t.equal(named.status, 503)
    const body = await named.json()
    t.same(body, {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: 'Not ready: Redis is down',
      requestId: body.requestId,
      details: [{ field: 'redis', message: 'Redis is down' }],
    })
    t.equal((await app.inject('/health')).statusCode, 200, 'liveness does not depend on Redis')
  },
)

t.test('readiness: a closed database is named', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-ready-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // A copy of an initialised folder: its own initdb here cost ~5 s of CPU, and only the closed client matters.
  await copyInitdb(dir)
  const sql = await connectPglite({ dataDir: dir })
  await sql.close()
  const app = Fastify()
  readinessRoute(app, sql, undefined, async () => true)
  const res = await app.inject({ url: '/health/ready', headers: bearer('an operator') })
  t.equal(res.statusCode, 503)
  t.equal(res.json().message, 'Not ready: the embedded database is down')
  t.same(res.json().details, [{ field: 'database', message: 'the embedded database is down' }])
})
