// Issue 43 item 6: with cors routes: 'all', the application's OPTIONS routes are found with public Fastify API only
// (onRoute, hasRoute, request.is404, a hook Fastify gives earlier routes too), never from printRoutes(), a drawing.
// Registered before the plugin, a route keeps answering; added after it, start-up is refused. Over real sockets;
// in the version matrix (scripts/test.mjs), since it depends on when Fastify gives a route its context's hooks.
import fastifyCors from '@fastify/cors'
import trivium from '@trivium/core'
import triviumProtections, { cors } from '@trivium/protections'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'

const ORIGIN = 'https://page.test'

/** An app whose printRoutes() throws: nothing here may depend on how Fastify draws its routes. */
function appWithoutRouteDrawing(): FastifyInstance {
  const app = Fastify()
  t.teardown(() => app.close())
  app.printRoutes = () => {
    throw new Error('printRoutes() was read')
  }
  return app
}

async function listen(
  app: FastifyInstance,
): Promise<(path: string, init?: RequestInit) => Promise<Response>> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  return (path, init) => fetch(base + path, init)
}

function options(origin: string | undefined, method = 'GET'): RequestInit {
  const headers: Record<string, string> = { 'access-control-request-method': method }
  if (origin !== undefined) headers.origin = origin
  return { method: 'OPTIONS', headers }
}

t.test(
  "routes: 'all': OPTIONS routes registered before the plugin keep answering; every other OPTIONS is a preflight",
  async (t) => {
    const app = appWithoutRouteDrawing()
    app.options('/legacy', async () => 'legacy answers')
    app.all('/any', async (request) => `any answers ${request.method}`)
    app.register(
      async (v1) => {
        v1.options('/things/:id', async () => 'v1 answers')
      },
      { prefix: '/v1' },
    )
    app.get('/plain', async () => 'plain')
    await app.register(trivium)
    await app.register(triviumProtections, {
      rateLimit: false,
      cors: { routes: 'all', allowedOrigins: [ORIGIN] },
    })
    app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
    const request = await listen(app)

    for (const [path, body] of [
      ['/legacy', 'legacy answers'],
      ['/any', 'any answers OPTIONS'],
      ['/v1/things/7', 'v1 answers'],
    ] as const) {
      const r = await request(path, options(ORIGIN))
      t.equal(r.status, 200, `${path}: the route's status`)
      t.equal(await r.text(), body, `${path}: the route's own answer`)
      t.equal(r.headers.get('access-control-allow-origin'), null, `${path}: no CORS header added`)
      t.equal(r.headers.get('access-control-max-age'), null, `${path}: not a preflight answer`)
      const without = await request(path, options(undefined))
      t.equal(await without.text(), body, `${path}: without an Origin too, never 403`)
    }
    // No OPTIONS route found: a preflight, on an endpoint, a plain GET route or nothing at all.
    for (const path of ['/ping', '/plain', '/nothing']) {
      const r = await request(path, options(ORIGIN))
      t.equal(r.status, 200, `${path}: preflight`)
      t.equal(await r.text(), '')
      t.equal(r.headers.get('access-control-allow-origin'), ORIGIN)
      t.equal(r.headers.get('access-control-allow-methods'), 'GET, POST, PUT, DELETE, OPTIONS')
      t.equal(r.headers.get('access-control-max-age'), '86400')
      const refused = await request(path, options('https://elsewhere.test'))
      t.equal(refused.status, 403, `${path}: a preflight from a disallowed origin`)
      t.equal(await refused.text(), 'Origin not allowed')
    }
    // The hook runs for the routes registered before it (Fastify gives a route its hooks at ready()).
    for (const path of ['/plain', '/ping', '/any']) {
      const r = await request(path, { headers: { origin: ORIGIN } })
      t.equal(r.status, 200)
      t.equal(r.headers.get('access-control-allow-origin'), ORIGIN, `${path}: an actual response's headers`)
      t.equal(r.headers.get('vary'), 'Origin')
    }
  },
)

t.test(
  "routes: 'all': of OPTIONS routes before and after the plugin, start-up names only the later ones",
  async (t) => {
    const app = appWithoutRouteDrawing()
    app.options('/before', async () => 'answers')
    await app.register(cors, { routes: 'all' })
    app.options('/after', async () => 'would never run')
    app.route({
      method: ['GET', 'OPTIONS'],
      url: '/both',
      handler: async () => 'would never run for OPTIONS',
    })
    await t.rejects(app.listen({ port: 0, host: '127.0.0.1' }), {
      code: 'TRV_PROTECTIONS_CORS_OPTIONS_ROUTE',
      message:
        '@trivium/protections: cors answers every OPTIONS request as a CORS preflight, so the routes OPTIONS /after, OPTIONS /both would never run; remove them, or register @trivium/protections with { cors: false } (and keep @fastify/cors)',
    })
  },
)

t.test(
  "routes: 'all': a catch-all OPTIONS route registered before is refused at once (hasRoute)",
  async (t) => {
    const message =
      '@trivium/protections: cors answers every OPTIONS request as a CORS preflight, so the route OPTIONS * (the one @fastify/cors adds) would never run; remove it, or register @trivium/protections with { cors: false } (and keep @fastify/cors)'
    const register = {
      '@fastify/cors': (app: FastifyInstance) => app.register(fastifyCors),
      "app.options('*')": (app: FastifyInstance) => app.options('*', async () => 'catch-all'),
      "app.all('/*')": (app: FastifyInstance) => app.all('/*', async () => 'catch-all'),
    }
    for (const [name, add] of Object.entries(register)) {
      const app = appWithoutRouteDrawing()
      await add(app)
      await t.rejects(
        async () => app.register(cors, { routes: 'all' }),
        { code: 'TRV_PROTECTIONS_CORS_OPTIONS_ROUTE', message },
        name,
      )
    }
    // A wildcard under a prefix is an ordinary route: it answers the OPTIONS requests it finds.
    const app = appWithoutRouteDrawing()
    app.options('/files/*', async () => 'files answer')
    await app.register(cors, { routes: 'all' })
    const request = await listen(app)
    t.equal(await (await request('/files/a/b', options(ORIGIN))).text(), 'files answer')
    t.equal((await request('/elsewhere', options(ORIGIN))).headers.get('access-control-allow-origin'), ORIGIN)
  },
)

t.test(
  "the default routes: 'trivium': the host's OPTIONS routes answer, registered before or after",
  async (t) => {
    const app = appWithoutRouteDrawing()
    app.options('/before', async () => 'before answers')
    await app.register(trivium)
    await app.register(triviumProtections, { rateLimit: false })
    app.options('/after', async () => 'after answers')
    app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
    const request = await listen(app)
    for (const path of ['/before', '/after']) {
      const r = await request(path, options(ORIGIN))
      t.equal(r.status, 200)
      t.equal(await r.text(), `${path.slice(1)} answers`)
      t.equal(r.headers.get('access-control-allow-origin'), null, `${path}: left as it was`)
    }
    const preflight = await request('/ping', options(ORIGIN))
    t.equal(preflight.headers.get('access-control-allow-origin'), ORIGIN, "Trivium's endpoint: a preflight")
    const host = await request('/nothing', options(ORIGIN))
    t.equal(host.status, 404, "not Trivium's: the host's 404, as without the plugin")
  },
)
