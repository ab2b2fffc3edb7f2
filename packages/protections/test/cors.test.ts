// CORS per the spec: origin matching, preflight 200/403, non-preflight headers, Vary, start-up checks.

import fastifyCors from '@fastify/cors'
import trivium from '@trivium/core'
import triviumProtections, { type CorsOptions, cors, originMatcher } from '@trivium/protections'
import Fastify from 'fastify'
import t from 'tap'

const CORS_NAMES = [
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-allow-credentials',
  'access-control-max-age',
  'access-control-expose-headers',
  'vary',
]

function corsHeaders(headers: Record<string, unknown>) {
  return Object.fromEntries(CORS_NAMES.filter((n) => headers[n] !== undefined).map((n) => [n, headers[n]]))
}

async function build(options: CorsOptions = {}) {
  const app = Fastify()
  await app.register(trivium)
  await app.register(cors, options)
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  app.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
    throw new Error('boom')
  })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('origin matching: *, *.suffix at a dot boundary, exact', async (t) => {
  const any = originMatcher(['*'])
  t.equal(any('https://anything.test'), true)
  const m = originMatcher(['*.example.com', 'https://app.test'])
  t.equal(m('https://api.example.com'), true)
  t.equal(m('http://a.b.example.com'), true)
  t.equal(m('https://evilexample.com'), false, 'no match without the dot boundary')
  t.equal(m('https://example.com'), false, 'the apex is not a subdomain')
  t.equal(m('https://api.example.com.evil.test'), false)
  t.equal(m('https://app.test'), true)
  t.equal(m('https://app.test:8443'), false, 'exact entries must be equal')
  t.equal(m('http://app.test'), false)
})

t.test(
  'origin matching: the same answers with a short list (compared one by one) and a long one (a Set)',
  async (t) => {
    const exact = Array.from({ length: 12 }, (_, i) => `https://app${i}.test`)
    for (const size of [1, 8, 9, 12]) {
      const m = originMatcher(['*.example.com', ...exact.slice(0, size)])
      t.equal(m(`https://app${size - 1}.test`), true, `${size}: the last entry`)
      t.equal(m('https://app0.test'), true, `${size}: the first entry`)
      t.equal(m(`https://app${size}.test`), false, `${size}: one past the list`)
      t.equal(m('https://app0.test/'), false, `${size}: exact means equal`)
      t.equal(m('https://app0.tes'), false, `${size}: a prefix is not equal`)
      t.equal(m('https://api.example.com'), true, `${size}: suffixes still apply`)
      t.equal(m('https://example.com'), false, `${size}: not the apex`)
      t.equal(m(''), false, `${size}: empty`)
    }
  },
)

t.test('preflight with the defaults: 200, exact headers, empty body', async (t) => {
  const app = await build()
  const r = await app.inject({ method: 'OPTIONS', url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(r.statusCode, 200)
  t.equal(r.body, '')
  t.same(corsHeaders(r.headers), {
    'access-control-allow-origin': 'https://site.test',
    'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
    'access-control-allow-headers': 'Content-Type, Authorization',
    'access-control-max-age': '86400',
    vary: 'Origin',
  })
})

t.test(
  'preflight without Origin or with a disallowed one: 403 text/plain `Origin not allowed`',
  async (t) => {
    const app = await build({ allowedOrigins: ['*.example.com'] })
    for (const headers of [{}, { origin: 'https://evilexample.com' }, { origin: 'https://example.com' }]) {
      const r = await app.inject({ method: 'OPTIONS', url: '/ping', headers })
      t.equal(r.statusCode, 403)
      t.equal(r.body, 'Origin not allowed')
      t.equal(r.headers['content-type'], 'text/plain; charset=utf-8')
      t.same(corsHeaders(r.headers), {}, 'no CORS headers on a refusal')
    }
    const ok = await app.inject({
      method: 'OPTIONS',
      url: '/ping',
      headers: { origin: 'https://api.example.com' },
    })
    t.equal(ok.statusCode, 200)
    t.equal(ok.headers['access-control-allow-origin'], 'https://api.example.com')
  },
)

t.test(
  "routes: 'all': preflight on a route that does not exist (OPTIONS /anything) and without Access-Control-Request-Method",
  async (t) => {
    const app = await build({ routes: 'all' })
    const r = await app.inject({
      method: 'OPTIONS',
      url: '/no/such/route',
      headers: { origin: 'https://x.test' },
    })
    t.equal(r.statusCode, 200)
    t.equal(r.headers['access-control-allow-origin'], 'https://x.test')
    const refused = await app.inject({ method: 'OPTIONS', url: '/anything' })
    t.equal(refused.statusCode, 403)
    t.equal(refused.body, 'Origin not allowed')
  },
)

t.test(
  'non-preflight with an allowed Origin: the same headers minus Max-Age, on success and errors',
  async (t) => {
    const app = await build({ allowedOrigins: ['https://app.test'], allowCredentials: true, maxAge: 600 })
    const expected = {
      'access-control-allow-origin': 'https://app.test',
      'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
      'access-control-allow-headers': 'Content-Type, Authorization',
      'access-control-allow-credentials': 'true',
      vary: 'Origin',
    }
    const r = await app.inject({ url: '/ping', headers: { origin: 'https://app.test' } })
    t.equal(r.statusCode, 200)
    t.same(corsHeaders(r.headers), expected)
    const err = await app.inject({ url: '/boom', headers: { origin: 'https://app.test' } })
    t.equal(err.statusCode, 500)
    t.same(corsHeaders(err.headers), expected)
    // A guest (routes: 'trivium', the default) adds nothing to what is not Trivium's: the host's 404.
    const nf = await app.inject({ url: '/nope', headers: { origin: 'https://app.test' } })
    t.equal(nf.statusCode, 404)
    t.same(corsHeaders(nf.headers), {})
    const pre = await app.inject({ method: 'OPTIONS', url: '/ping', headers: { origin: 'https://app.test' } })
    t.same(corsHeaders(pre.headers), { ...expected, 'access-control-max-age': '600' })
  },
)

t.test('non-preflight with no or a disallowed Origin: request proceeds, no CORS headers', async (t) => {
  const app = await build({ allowedOrigins: ['https://app.test'] })
  for (const headers of [{}, { origin: 'https://other.test' }]) {
    const r = await app.inject({ url: '/ping', headers })
    t.equal(r.statusCode, 200)
    t.same(corsHeaders(r.headers), {})
  }
})

t.test('Allow-Credentials only when enabled; custom lists joined with ", "', async (t) => {
  const app = await build({ allowedMethods: ['GET'], allowedHeaders: ['X-A', 'X-B'] })
  const r = await app.inject({ method: 'OPTIONS', url: '/ping', headers: { origin: 'https://s.test' } })
  t.equal(r.headers['access-control-allow-credentials'], undefined)
  t.equal(r.headers['access-control-allow-methods'], 'GET')
  t.equal(r.headers['access-control-allow-headers'], 'X-A, X-B')
})

t.test('start-up checks: `*` with credentials is refused; bad values', async (t) => {
  const cases: [CorsOptions, string][] = [
    [
      { allowCredentials: true },
      '@trivium/protections: cors.allowCredentials cannot be combined with the origin "*" (any site could make credentialed requests); list the allowed origins',
    ],
    [
      { allowCredentials: true, allowedOrigins: ['https://a.test', '*'] },
      '@trivium/protections: cors.allowCredentials cannot be combined with the origin "*" (any site could make credentialed requests); list the allowed origins',
    ],
    [
      { allowedOrigins: 'https://a.test' as never },
      '@trivium/protections: cors.allowedOrigins must be an array of non-empty strings without commas',
    ],
    [
      { allowedHeaders: ['a\r\nb'] },
      '@trivium/protections: cors.allowedHeaders must be an array of non-empty strings without commas',
    ],
    [
      { exposedHeaders: ['Retry-After, X-A'] },
      '@trivium/protections: cors.exposedHeaders must be an array of non-empty strings without commas',
    ],
    [{ maxAge: -1 }, '@trivium/protections: cors.maxAge must be a non-negative integer (seconds)'],
    [{ allowCredentials: 'yes' as never }, '@trivium/protections: cors.allowCredentials must be a boolean'],
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await t.rejects(
      async () => {
        await app.register(cors, options)
      },
      { message },
    )
    await app.close()
  }
})

// Issue 40 item 5: a page may read only the response headers CORS exposes.
t.test(
  'exposedHeaders: Access-Control-Expose-Headers on responses to an allowed Origin (not on preflights), over a socket',
  async (t) => {
    const exposed = [
      'Idempotent-Replayed',
      'Retry-After',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ]
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    app.trivium.use((_call, next) => next(), { name: 'auth' }) // the limiter counts after authentication
    await app.register(triviumProtections, {
      cors: { allowedOrigins: ['https://app.test'], exposedHeaders: exposed },
      rateLimit: { limits: { ping: { requests: 1, windowMs: 60_000 } } },
    })
    app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const origin = { origin: 'https://app.test' }
    const ok = await fetch(`${base}/ping`, { headers: origin })
    t.equal(ok.status, 200)
    t.equal(
      ok.headers.get('access-control-expose-headers'),
      'Idempotent-Replayed, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
    )
    t.equal(ok.headers.get('x-ratelimit-limit'), '1')
    const limited = await fetch(`${base}/ping`, { headers: origin })
    t.equal(limited.status, 429)
    t.equal(
      limited.headers.get('access-control-expose-headers'),
      'Idempotent-Replayed, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
      'on an error answer too',
    )
    t.ok(limited.headers.get('retry-after'))
    const pre = await fetch(`${base}/ping`, { method: 'OPTIONS', headers: origin })
    t.equal(pre.status, 200)
    t.equal(pre.headers.get('access-control-expose-headers'), null, 'not on a preflight')
    const other = await fetch(`${base}/nope`, { headers: { origin: 'https://other.test' } })
    t.equal(other.headers.get('access-control-expose-headers'), null, 'not for a disallowed Origin')
  },
)

t.test('without exposedHeaders (the default) no Access-Control-Expose-Headers is sent', async (t) => {
  const app = await build()
  const r = await app.inject({ url: '/ping', headers: { origin: 'https://site.test' } })
  t.equal(r.headers['access-control-expose-headers'], undefined)
  t.equal(r.headers['access-control-allow-headers'], 'Content-Type, Authorization', "the spec's default")
})

// Issue 40 item 10: a second CORS registration would lose silently to the first (it answers every preflight).
t.test('cors registered twice in one context, or again in a child context, is refused', async (t) => {
  const message =
    '@trivium/protections: cors is registered twice (this context or a parent already has it, from triviumProtections or cors); register it once, with all its options there'
  const twice = Fastify()
  t.teardown(() => twice.close())
  await twice.register(cors)
  await t.rejects(async () => twice.register(cors, { allowedOrigins: ['https://a.test'] }), { message })

  const combined = Fastify()
  t.teardown(() => combined.close())
  await combined.register(trivium)
  await combined.register(triviumProtections, { rateLimit: false })
  await t.rejects(async () => combined.register(cors), { message }, 'after triviumProtections')

  const child = Fastify()
  t.teardown(() => child.close())
  await child.register(cors)
  child.register(async (scope) => {
    await scope.register(cors, { allowedOrigins: ['https://a.test'] })
  })
  await t.rejects(child.listen({ port: 0, host: '127.0.0.1' }), { message }, 'listen() rejects')
})

t.test('sibling contexts may each have their own CORS policy', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  for (const [prefix, origin] of [
    ['/a', 'https://a.test'],
    ['/b', 'https://b.test'],
  ] as const) {
    app.register(
      async (scope) => {
        await scope.register(cors, { allowedOrigins: [origin], routes: 'all' })
        scope.get('/ping', async () => 'pong')
      },
      { prefix },
    )
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  for (const [path, origin, allowed] of [
    ['/a/ping', 'https://a.test', 'https://a.test'],
    ['/a/ping', 'https://b.test', null],
    ['/b/ping', 'https://b.test', 'https://b.test'],
  ] as const) {
    const r = await fetch(`${base}${path}`, { headers: { origin } })
    t.equal(r.headers.get('access-control-allow-origin'), allowed, `${path} from ${origin}`)
  }
})

// Issue 40: a guest (routes: 'trivium', the default) answers CORS for Trivium's routes only, so the host's
// @fastify/cors and OPTIONS routes keep working beside it, in both orders, over real sockets.
t.test(
  "the default routes: 'trivium' beside the host's @fastify/cors and OPTIONS routes, both orders",
  async (t) => {
    for (const order of ['trivium first', '@fastify/cors first'] as const) {
      const app = Fastify()
      t.teardown(() => app.close())
      if (order === '@fastify/cors first') await app.register(fastifyCors, { origin: 'https://host.test' })
      await app.register(trivium)
      await app.register(triviumProtections, { rateLimit: false })
      if (order === 'trivium first') await app.register(fastifyCors, { origin: 'https://host.test' })
      app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
      app.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, () => ({ ok: true }))
      app.get('/legacy', async () => 'legacy')
      await app.listen({ port: 0, host: '127.0.0.1' })
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
      const preflight = (path: string) =>
        fetch(base + path, {
          method: 'OPTIONS',
          headers: { origin: 'https://page.test', 'access-control-request-method': 'GET' },
        })
      // Both are app-wide hooks on the endpoint's requests: the first onRequest hook answers a preflight, the
      // last one sets an actual response's headers (README "CORS": beside @fastify/cors).
      const mine = await preflight('/tasks/42')
      if (order === 'trivium first') {
        t.equal(mine.status, 200, `${order}: Trivium answers its endpoint's preflight`)
        t.equal(mine.headers.get('access-control-allow-origin'), 'https://page.test')
        t.equal(mine.headers.get('access-control-allow-headers'), 'Content-Type, Authorization')
      } else
        t.equal(mine.status, 204, `${order}: the host-wide @fastify/cors, first, answers every preflight`)
      const host = await preflight('/legacy')
      t.equal(host.status, 204, `${order}: @fastify/cors answers the host's preflight`)
      t.equal(host.headers.get('access-control-allow-origin'), 'https://host.test')
      const legacy = await fetch(`${base}/legacy`, { headers: { origin: 'https://page.test' } })
      t.equal(await legacy.text(), 'legacy')
      t.equal(
        legacy.headers.get('access-control-allow-origin'),
        'https://host.test',
        `${order}: the host's own answer`,
      )
      const ping = await fetch(`${base}/ping`, { headers: { origin: 'https://page.test' } })
      t.equal(
        ping.headers.get('access-control-allow-origin'),
        order === 'trivium first' ? 'https://host.test' : 'https://page.test',
        `${order}: the last hook's on the endpoint`,
      )
    }
    const own = Fastify()
    t.teardown(() => own.close())
    await own.register(cors)
    own.options('/things', async () => 'the host answers its own OPTIONS route')
    await own.ready()
    const r = await own.inject({ method: 'OPTIONS', url: '/things', headers: { origin: 'https://x.test' } })
    t.equal(r.body, 'the host answers its own OPTIONS route')
    await t.rejects(
      async () => {
        const bad = Fastify()
        t.teardown(() => bad.close())
        await bad.register(cors, { routes: 'everywhere' as never })
      },
      { message: `@trivium/protections: cors.routes must be 'trivium' or 'all', got "everywhere"` },
    )
  },
)

// Issue 40 item 9: @fastify/cors adds `OPTIONS *`; registered after Trivium's CORS with routes: 'all' it used
// to end the process with an uncaught TypeError from the onRoute hook. Now ready()/listen() reject, in both orders.
t.test(
  "routes: 'all' beside @fastify/cors: ready() and listen() reject with the fix named, in both orders",
  async (t) => {
    const message =
      '@trivium/protections: cors answers every OPTIONS request as a CORS preflight, so the route OPTIONS * (the one @fastify/cors adds) would never run; remove it, or register @trivium/protections with { cors: false } (and keep @fastify/cors)'
    const uncaught: unknown[] = []
    const record = (err: unknown) => uncaught.push(err)
    process.on('uncaughtException', record)
    t.teardown(() => process.off('uncaughtException', record))

    const after = Fastify()
    t.teardown(() => after.close())
    await after.register(trivium)
    await after.register(triviumProtections, { rateLimit: false, cors: { routes: 'all' } })
    after.register(fastifyCors)
    await t.rejects(async () => after.ready(), { message }, '@fastify/cors after: ready() rejects')

    const afterListen = Fastify()
    t.teardown(() => afterListen.close())
    await afterListen.register(cors, { routes: 'all' })
    afterListen.register(fastifyCors)
    await t.rejects(afterListen.listen({ port: 0, host: '127.0.0.1' }), { message }, 'listen() rejects')

    const before = Fastify()
    t.teardown(() => before.close())
    await before.register(fastifyCors)
    await before.register(trivium)
    await t.rejects(
      async () => before.register(triviumProtections, { rateLimit: false, cors: { routes: 'all' } }),
      { message },
      'before',
    )
    t.same(uncaught, [], 'no uncaught exception')
  },
)

t.test(
  "routes: 'all': an OPTIONS route added after Trivium CORS: ready() rejects naming every such route",
  async (t) => {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(cors, { routes: 'all' })
    app.options('/things', async () => 'never reached')
    app.register(
      async (v1) => {
        v1.all('/any', async () => 'never reached for OPTIONS')
      },
      { prefix: '/v1' },
    )
    await t.rejects(async () => app.ready(), {
      message:
        '@trivium/protections: cors answers every OPTIONS request as a CORS preflight, so the routes OPTIONS /things, OPTIONS /v1/any would never run; remove them, or register @trivium/protections with { cors: false } (and keep @fastify/cors)',
    })
  },
)
