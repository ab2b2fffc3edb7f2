// Deployment settings of the demo (issue 18): CORS_ORIGINS / CORS_CREDENTIALS, RATE_LIMIT_DEFAULT /
// RATE_LIMITS (0 or off = no limit), BODY_LIMIT, ACCESS_TOKEN_TTL, METRICS / METRICS_TOKEN / METRICS_LISTEN,
// ACCESS_LOG.
// Bad values are refused at start-up with one clear line.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { loadConfig } from '../dist/config.js'
import { registerAndLogin, startDemo } from './helpers.js'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))

t.test(
  'defaults: any origin, the spec limit 100/60 s, 1 MiB bodies, 1 h tokens, metrics and access log on',
  async (t) => {
    const c = loadConfig({})
    t.same(c.corsOrigins, ['*'])
    t.equal(c.corsCredentials, false)
    t.same(c.corsHeaders, ['Content-Type', 'Authorization'], "the spec's allowed headers")
    t.same(c.corsExposedHeaders, [])
    t.same(c.rateLimitDefault, { requests: 100, windowMs: 60_000 })
    t.same(c.rateLimits, {})
    t.equal(c.bodyLimit, 1_048_576)
    t.equal(c.accessTokenTtlSeconds, 3600)
    t.equal(c.metrics, true)
    t.equal(c.metricsToken, undefined)
    t.equal(c.metricsListen, undefined)
    t.equal(c.accessLog, true)
    t.equal(c.compression, true)
  },
)

t.test('values are parsed', async (t) => {
  const c = loadConfig({
    CORS_ORIGINS: 'https://app.example.com, *.example.org,http://localhost:5173',
    CORS_CREDENTIALS: 'true',
    CORS_HEADERS: 'Content-Type, Authorization,Trivium-Timeout-Ms, Idempotency-Key',
    CORS_EXPOSED_HEADERS: 'Idempotent-Replayed, Retry-After',
    RATE_LIMIT_DEFAULT: '1000/1m',
    RATE_LIMITS: 'auth.login=0,auth.register=off,tasks.create=20/500ms',
    BODY_LIMIT: '65536',
    ACCESS_TOKEN_TTL: '900',
    METRICS: 'false',
    METRICS_TOKEN: 'abcdefghijklmnop',
    METRICS_LISTEN: '10.0.0.5:9464',
    ACCESS_LOG: 'false',
  })
  t.same(c.corsOrigins, ['https://app.example.com', '*.example.org', 'http://localhost:5173'])
  t.equal(c.corsCredentials, true)
  t.same(c.corsHeaders, ['Content-Type', 'Authorization', 'Trivium-Timeout-Ms', 'Idempotency-Key'])
  t.same(c.corsExposedHeaders, ['Idempotent-Replayed', 'Retry-After'])
  t.same(c.rateLimitDefault, { requests: 1000, windowMs: 60_000 })
  t.same(c.rateLimits, {
    'auth.login': false,
    'auth.register': false,
    'tasks.create': { requests: 20, windowMs: 500 },
  })
  t.equal(c.bodyLimit, 65536)
  t.equal(c.accessTokenTtlSeconds, 900)
  t.equal(c.metrics, false)
  t.equal(c.metricsToken, 'abcdefghijklmnop')
  t.same(c.metricsListen, { host: '10.0.0.5', port: 9464 })
  t.same(loadConfig({ METRICS_LISTEN: '9464' }).metricsListen, { host: '127.0.0.1', port: 9464 })
  t.same(loadConfig({ METRICS_LISTEN: '[::1]:0' }).metricsListen, { host: '::1', port: 0 })
  t.equal(c.accessLog, false)
  t.equal(loadConfig({ RATE_LIMIT_DEFAULT: 'off' }).rateLimitDefault, false)
  t.equal(loadConfig({ COMPRESSION: 'off' }).compression, false)
  t.equal(loadConfig({ COMPRESSION: 'on' }).compression, true)
  t.same(loadConfig({ COMPRESSION: '4096' }).compression, { threshold: 4096 })
})

const NOT_PEM = fileURLToPath(new URL('../package.json', import.meta.url))
const BAD: Array<[Record<string, string>, string]> = [
  [
    { CORS_ORIGINS: 'https://example.com/path' },
    'CORS_ORIGINS entry "https://example.com/path" is not an origin: use *, *.example.com or https://host[:port] (no path), comma-separated',
  ],
  [{ CORS_CREDENTIALS: 'yes' }, 'CORS_CREDENTIALS must be true or false, got yes'],
  [
    { CORS_HEADERS: 'Content-Type, Bad Header' },
    'CORS_HEADERS entry "Bad Header" is not a header name: use names such as Trivium-Timeout-Ms, Idempotency-Key, comma-separated',
  ],
  [
    { CORS_EXPOSED_HEADERS: 'Retry-After,' },
    'CORS_EXPOSED_HEADERS entry "" is not a header name: use names such as Trivium-Timeout-Ms, Idempotency-Key, comma-separated',
  ],
  [
    { CORS_CREDENTIALS: 'true' },
    'CORS_CREDENTIALS=true needs CORS_ORIGINS to list the allowed origins (not *)',
  ],
  [
    { RATE_LIMIT_DEFAULT: '100' },
    'RATE_LIMIT_DEFAULT "100" is not a rate limit: use <requests>/<window> such as 100/60s, 5/1m or 1000/500ms, or 0 (or off) for no limit',
  ],
  [
    { RATE_LIMITS: 'auth.login=5/0s' },
    'RATE_LIMITS auth.login "5/0s" is not a rate limit: use <requests>/<window> such as 100/60s, 5/1m or 1000/500ms, or 0 (or off) for no limit',
  ],
  [
    { RATE_LIMITS: 'auth.login' },
    'RATE_LIMITS entry "auth.login" must be <endpoint>=<limit>, e.g. auth.login=5/60s',
  ],
  [{ RATE_LIMITS: 'a=1/1s,a=2/1s' }, 'RATE_LIMITS names a twice'],
  [
    { RATE_LIMITS: 'health=5/60s' },
    'RATE_LIMITS names health, which is never rate limited (liveness probes); remove it',
  ],
  [
    { RATE_LIMIT_DEFAULT: 'off', RATE_LIMITS: 'auth.login=5/60s' },
    'RATE_LIMIT_DEFAULT=off turns rate limiting off for every endpoint; unset RATE_LIMITS',
  ],
  [{ BODY_LIMIT: '1e6' }, 'BODY_LIMIT must be a positive whole number of bytes, got 1e6'],
  [{ BODY_LIMIT: '0' }, 'BODY_LIMIT must be a positive whole number of bytes, got 0'],
  [{ ACCESS_TOKEN_TTL: '-5' }, 'ACCESS_TOKEN_TTL must be a positive whole number of seconds, got -5'],
  [{ METRICS_TOKEN: 'short' }, 'METRICS_TOKEN must be at least 16 characters (e.g. openssl rand -hex 16)'],
  [{ ACCESS_LOG: 'maybe' }, 'ACCESS_LOG must be true or false, got maybe'],
  [{ COMPRESSION: 'gzip' }, 'COMPRESSION must be on, off or a threshold in bytes (e.g. 1024), got gzip'],
  [{ COMPRESSION: '0' }, 'COMPRESSION must be on, off or a threshold in bytes (e.g. 1024), got 0'],
  [{ PORT: '4000' }, 'PORT and TCP_PORT must differ (both are 4000)'],
  [
    { METRICS_LISTEN: 'host:99999' },
    'METRICS_LISTEN must be <port> or <host>:<port> (e.g. 127.0.0.1:9464, [::1]:9464), got host:99999',
  ],
  // Issue 32: Redis topologies, credentials and TLS; DATABASE_CA_FILE.
  [
    { REDIS_URL: 'redis://r:6379', REDIS_SENTINELS: 's:26379', REDIS_CLUSTER_NODES: 'c:6379' },
    'REDIS_URL and REDIS_SENTINELS and REDIS_CLUSTER_NODES are all set — keep one: REDIS_URL (one Redis), REDIS_SENTINELS (a Sentinel set) or REDIS_CLUSTER_NODES (a cluster)',
  ],
  [
    { REDIS_SENTINELS: 's:26379', REDIS_CLUSTER_NODES: 'c:6379' },
    'REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set — keep one: REDIS_URL (one Redis), REDIS_SENTINELS (a Sentinel set) or REDIS_CLUSTER_NODES (a cluster)',
  ],
  [
    { REDIS_SENTINELS: '10.0.0.1:26379,sentinel-b' },
    'REDIS_SENTINELS entry "sentinel-b" must be <host>:<port> (e.g. 10.0.0.5:26379), comma-separated',
  ],
  [
    { REDIS_CLUSTER_NODES: '10.0.0.1:70000' },
    'REDIS_CLUSTER_NODES entry "10.0.0.1:70000" must be <host>:<port> (e.g. 10.0.0.5:26379), comma-separated',
  ],
  [
    { REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_PASSWORD: 'x' },
    'REDIS_SENTINEL_PASSWORD is set without REDIS_SENTINELS — set REDIS_SENTINELS or remove it',
  ],
  [
    { REDIS_PASSWORD: 'x' },
    'REDIS_PASSWORD is set but no Redis is — set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, or remove it',
  ],
  [
    { REDIS_URL: 'redis://:a@r:6379', REDIS_PASSWORD: 'b' },
    'REDIS_URL and REDIS_PASSWORD both give a password — keep one',
  ],
  [
    { REDIS_URL: 'redis://r:6379', REDIS_TLS: 'true' },
    'REDIS_TLS applies to REDIS_SENTINELS and REDIS_CLUSTER_NODES — with REDIS_URL use rediss:// for TLS',
  ],
  [{ REDIS_CLUSTER_NODES: 'c:6379', REDIS_TLS: 'yes' }, 'REDIS_TLS must be true or false, got yes'],
  [
    { REDIS_SENTINELS: 's:26379', REDIS_TLS_CA: '/etc/ca.pem' },
    'REDIS_TLS_CA is set but the Redis connections are not TLS — set REDIS_TLS=true',
  ],
  [
    { REDIS_URL: 'rediss://r:6379', REDIS_TLS_CERT: '/etc/client.pem' },
    'REDIS_TLS_CERT is set without REDIS_TLS_KEY — a client certificate needs both',
  ],
  [
    { REDIS_URL: 'rediss://r:6379', REDIS_TLS_CA: '/nonexistent/ca.pem' },
    'REDIS_TLS_CA: cannot read /nonexistent/ca.pem (ENOENT) — give the path of a PEM file',
  ],
  [
    { REDIS_URL: 'rediss://r:6379', REDIS_TLS_CA: NOT_PEM },
    `REDIS_TLS_CA: ${NOT_PEM} is not a PEM file (no -----BEGIN line) — give a PEM file`,
  ],
  [
    { DATABASE_CA_FILE: '/etc/ca.pem' },
    'DATABASE_CA_FILE is set without DATABASE_URL — set DATABASE_URL or remove it',
  ],
  [
    { DATABASE_URL: 'postgres://db/x?sslmode=disable', DATABASE_CA_FILE: '/etc/ca.pem' },
    'DATABASE_CA_FILE needs sslmode=verify-full in DATABASE_URL (sslmode=disable given)',
  ],
  [
    {
      DATABASE_URL: 'postgres://db/x?sslmode=verify-full&sslrootcert=/a.pem',
      DATABASE_CA_FILE: '/etc/ca.pem',
    },
    'DATABASE_URL (sslrootcert) and DATABASE_CA_FILE both give a CA — keep one',
  ],
]
t.test('bad values are refused with a message that names the fix', async (t) => {
  for (const [env, message] of BAD)
    t.throws(() => loadConfig(env), { name: 'ConfigError', message }, JSON.stringify(env))
})

t.test('the server refuses to start on a bad value: one line, exit 1, no stack trace', async (t) => {
  const run = spawnSync(process.execPath, [SERVER], {
    env: { ...process.env, RATE_LIMITS: 'auth.login=five', PORT: '0', TCP_PORT: '-1' },
    encoding: 'utf8',
    timeout: 20_000,
  })
  t.equal(run.status, 1)
  t.equal(
    run.stderr,
    'Trivium Tasks failed to start: RATE_LIMITS auth.login "five" is not a rate limit: use <requests>/<window> such as 100/60s, 5/1m or 1000/500ms, or 0 (or off) for no limit\n',
  )
})

t.test('an unknown endpoint in RATE_LIMITS is refused when the app is built', async (t) => {
  await t.rejects(startDemo(t, { rateLimits: { 'auth.logn': false } }), {
    name: 'ConfigError',
    message: 'RATE_LIMITS names auth.logn, which is not an endpoint of this service',
  })
})

t.test('CORS_ORIGINS: listed and *.domain origins pass the preflight, others get 403', async (t) => {
  const { app } = await startDemo(t, {
    corsOrigins: ['https://app.example.com', '*.example.org'],
    corsCredentials: true,
  })
  const preflight = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/tasks',
      headers: { origin, 'access-control-request-method': 'POST' },
    })
  const ok = await preflight('https://app.example.com')
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers['access-control-allow-origin'], 'https://app.example.com')
  t.equal(ok.headers['access-control-allow-credentials'], 'true')
  t.equal((await preflight('https://eu.example.org')).statusCode, 200)
  const denied = await preflight('https://evil.example.net')
  t.equal(denied.statusCode, 403)
  t.equal(denied.body, 'Origin not allowed')
  t.equal(ok.headers['access-control-allow-headers'], 'Content-Type, Authorization', "the spec's default")

  // On the same demo (one start fewer for the suite).
  await t.test(
    'CORS_ORIGINS also decide which pages may open the WebSocket (and this host always may)',
    async (t) => {
      // Through inject the upgrade's checks run, then (no socket to upgrade) the plain-GET answer: a 400
      // there means the Origin was accepted.
      const upgrade = (origin: string) =>
        app.inject({
          method: 'GET',
          url: '/ws',
          headers: {
            host: 'tasks.local:3000',
            origin,
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            'sec-websocket-version': '13',
          },
        })
      const denied = await upgrade('https://evil.example.net')
      t.equal(denied.statusCode, 403)
      t.match(denied.json(), { code: 'TRV_FORBIDDEN', message: 'Origin not allowed' })
      t.equal((await upgrade('https://app.example.com')).statusCode, 400, 'a CORS origin passes')
      t.equal((await upgrade('http://tasks.local:3000')).statusCode, 400, 'the page of this host passes')
    },
  )
})

t.test(
  'RATE_LIMITS: auth.login off lets a load test log in 8 times a minute; a per-endpoint limit applies',
  async (t) => {
    const { app } = await startDemo(t, {
      rateLimits: { 'auth.login': false, 'auth.me': { requests: 2, windowMs: 60_000 } },
      rateLimitDefault: { requests: 50, windowMs: 60_000 },
      // For the BODY_LIMIT and ACCESS_TOKEN_TTL subtest below (the same demo: one start fewer for the suite).
      bodyLimit: 2048,
      accessTokenTtlSeconds: 900,
    })
    const { tokens } = await registerAndLogin(app, 'loader')
    for (let i = 0; i < 8; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { username: 'loader', password: 'Str0ng!Passw0rd' },
      })
      t.equal(res.statusCode, 200, `login ${i + 1}`)
      t.equal(res.headers['x-ratelimit-limit'], undefined)
    }
    const me = () =>
      app.inject({ url: '/auth/me', headers: { authorization: `Bearer ${tokens.accessToken}` } })
    t.equal((await me()).headers['x-ratelimit-limit'], '2')
    t.equal((await me()).statusCode, 200)
    t.equal((await me()).statusCode, 429)
    const refresh = await app.inject({ method: 'POST', url: '/auth/refresh', payload: { refreshToken: 'x' } })
    t.equal(refresh.headers['x-ratelimit-limit'], '50')
    t.equal((await app.inject('/health')).headers['x-ratelimit-limit'], undefined, 'health: never limited')

    await t.test('BODY_LIMIT and ACCESS_TOKEN_TTL reach the service', async (t) => {
      const { tokens: ttl } = await registerAndLogin(app, 'ttl')
      t.equal(ttl.expiresIn, 900)
      const big = await app.inject({
        method: 'POST',
        url: '/tasks',
        headers: { authorization: `Bearer ${ttl.accessToken}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ title: 'x'.repeat(4096) }),
      })
      t.equal(big.statusCode, 413)
    })
  },
)
