// Why this package does not use @fastify/helmet, @fastify/cors or @fastify/rate-limit: each difference
// from the spec the README lists, observed here against the installed versions (devDependencies only).
// If an upstream release fixes one, this file says so by failing.
import fastifyCors from '@fastify/cors'
import helmet from '@fastify/helmet'
import fastifyRateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'
import t from 'tap'

t.test('@fastify/helmet cannot produce the spec set', async (t) => {
  const app = Fastify()
  // The closest configuration there is.
  await app.register(helmet, {
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'strict-origin-when-cross-origin' },
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'self'"] } },
    xXssProtection: true,
  })
  app.get('/', async () => 'ok')
  const r = await app.inject('/')
  t.equal(r.headers['x-xss-protection'], '0', 'hard-coded 0, the spec wants `1; mode=block`')
  t.equal(r.headers['permissions-policy'], undefined, 'no Permissions-Policy support')
  t.equal(
    r.headers['cross-origin-opener-policy'],
    'same-origin',
    'extra headers unless switched off one by one',
  )
  t.equal(r.headers['x-dns-prefetch-control'], 'off')
  t.equal(r.headers['x-frame-options'], 'DENY')
  t.equal(r.headers['content-security-policy'], "default-src 'self'")
  await app.close()
})

t.test(
  '@fastify/cors answers preflights 204 and never 403; no Allow-Methods on simple requests',
  async (t) => {
    const app = Fastify()
    await app.register(fastifyCors, { origin: ['https://app.test'] })
    app.get('/r', async () => 'ok')
    const ok = await app.inject({
      method: 'OPTIONS',
      url: '/r',
      headers: { origin: 'https://app.test', 'access-control-request-method': 'GET' },
    })
    t.equal(ok.statusCode, 204, 'spec: 200')
    const bad = await app.inject({
      method: 'OPTIONS',
      url: '/r',
      headers: { origin: 'https://evil.test', 'access-control-request-method': 'GET' },
    })
    t.not(bad.statusCode, 403, 'spec: 403 `Origin not allowed`')
    const noAcrm = await app.inject({ method: 'OPTIONS', url: '/r', headers: { origin: 'https://app.test' } })
    t.equal(
      noAcrm.statusCode,
      400,
      'strictPreflight: an OPTIONS without Access-Control-Request-Method is 400',
    )
    const simple = await app.inject({ url: '/r', headers: { origin: 'https://app.test' } })
    t.equal(simple.headers['access-control-allow-origin'], 'https://app.test')
    t.equal(simple.headers['access-control-allow-methods'], undefined, 'spec: the same headers minus Max-Age')
    await app.close()
    const star = Fastify()
    await star.register(fastifyCors, { origin: true, credentials: true })
    star.get('/r', async () => 'ok')
    const reflected = await star.inject({ url: '/r', headers: { origin: 'https://evil.test' } })
    t.equal(reflected.headers['access-control-allow-origin'], 'https://evil.test', 'any origin reflected…')
    t.equal(
      reflected.headers['access-control-allow-credentials'],
      'true',
      '…with credentials, accepted at start-up',
    )
    await star.close()
  },
)

t.test('@fastify/rate-limit: reset in seconds, not the spec message', async (t) => {
  const app = Fastify()
  await app.register(fastifyRateLimit, { max: 1, timeWindow: 60_000 })
  app.get('/r', async () => 'ok')
  const r1 = await app.inject('/r')
  t.equal(
    r1.headers['x-ratelimit-reset'],
    '60',
    'seconds until reset; the spec wants the window end in epoch ms',
  )
  const r2 = await app.inject('/r')
  t.equal(r2.statusCode, 429)
  t.equal(r2.json().message, 'Rate limit exceeded, retry in 1 minute', 'not the spec message')
  await app.close()
})
