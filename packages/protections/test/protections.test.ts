// The combined plugin with the spec's defaults, as the demo registers it.

import trivium from '@trivium/core'
import triviumProtections, { triviumProtections as named } from '@trivium/protections'
import Fastify from 'fastify'
import t from 'tap'

const SECURITY = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-xss-protection': '1; mode=block',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': "default-src 'self'",
  'referrer-policy': 'strict-origin-when-cross-origin',
  'permissions-policy': 'geolocation=(), microphone=(), camera=()',
}
const pick = (h: Record<string, unknown>, names: string[]) => Object.fromEntries(names.map((n) => [n, h[n]]))

async function build() {
  const app = Fastify()
  await app.register(trivium)
  app.trivium.use((_call, next) => next(), { name: 'auth' })
  await app.register(triviumProtections, {
    rateLimit: { limits: { ping: { requests: 1, windowMs: 60_000 } } },
    securityHeaders: { routes: 'all' }, // preflights and 404s are no endpoint's: as an app that owns its routes
  })
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('default and named export are the same plugin, named @trivium/protections', async (t) => {
  t.equal(triviumProtections, named)
  t.equal(
    (triviumProtections as unknown as Record<symbol, unknown>)[Symbol.for('fastify.display-name')],
    '@trivium/protections',
  )
})

t.test('all three together on one request', async (t) => {
  const app = await build()
  const r = await app.inject({ url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(r.statusCode, 200)
  t.same(pick(r.headers, Object.keys(SECURITY)), SECURITY)
  t.equal(r.headers['access-control-allow-origin'], 'https://site.test')
  t.equal(r.headers['access-control-allow-methods'], 'GET, POST, PUT, DELETE, OPTIONS')
  t.equal(r.headers['access-control-allow-headers'], 'Content-Type, Authorization')
  t.equal(r.headers['access-control-max-age'], undefined)
  t.equal(r.headers.vary, 'Origin')
  t.equal(r.headers['x-ratelimit-limit'], '1')
  t.equal(r.headers['x-ratelimit-remaining'], '0')
  const denied = await app.inject({ url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(denied.statusCode, 429)
  t.equal(denied.headers['retry-after'], '60')
  t.same(pick(denied.headers, Object.keys(SECURITY)), SECURITY, 'security headers on the 429')
  t.equal(denied.headers['access-control-allow-origin'], 'https://site.test', 'CORS headers on the 429')
  // A preflight is answered before the rate limiter and carries the security headers.
  const pre = await app.inject({ method: 'OPTIONS', url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(pre.statusCode, 200)
  t.equal(pre.headers['access-control-max-age'], '86400')
  t.same(pick(pre.headers, Object.keys(SECURITY)), SECURITY)
  const refused = await app.inject({ method: 'OPTIONS', url: '/ping' })
  t.equal(refused.statusCode, 403)
  t.same(pick(refused.headers, Object.keys(SECURITY)), SECURITY)
})

t.test('each concern can be switched off', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumProtections, { rateLimit: false, cors: false })
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  await app.ready()
  t.teardown(() => app.close())
  const r = await app.inject({ url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(r.headers['x-ratelimit-limit'], undefined)
  t.equal(r.headers['access-control-allow-origin'], undefined)
  t.equal(r.headers['x-frame-options'], 'DENY')
  // rateLimit: false stands in as the enforcer of declared limits (switched off by the app), nothing else.
  t.same(app.trivium.pipeline.names(), ['rate-limits-off'])
})

t.test('needs @trivium/core', async (t) => {
  const app = Fastify()
  await t.rejects(
    async () => {
      await app.register(triviumProtections)
    },
    { message: /@trivium\/core/ },
  )
  await app.close()
})
