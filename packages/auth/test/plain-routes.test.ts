// Existing Fastify routes under the same auth, RBAC and rate-limit rules as endpoints
// (`config.triviumRoute`), with the caller read with `triviumUser(request)` (request-user.test.ts: `request.user`).
import { randomBytes } from 'node:crypto'
import triviumAuth, { triviumUser } from '@trivium/auth'
import trivium, { type TriviumIdentity } from '@trivium/core'
import { rateLimit } from '@trivium/protections'
import { triviumRbac } from '@trivium/rbac'
import { connectPostgres } from '@trivium/sql'
import Fastify from 'fastify'
import t from 'tap'
import { ISSUER, SECRET } from './helpers.js'

const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'

async function build() {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
  t.teardown(async () => {
    await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.close()
  })
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.register(triviumRbac, { sql })
  await app.register(rateLimit)
  // Plain Fastify routes, as an existing service has them.
  app.get(
    '/legacy/hello',
    { config: { triviumRoute: { auth: 'public', rateLimit: { requests: 2, windowMs: 60_000 } } } },
    async () => ({ hello: 'world' }),
  )
  app.get('/legacy/report', { config: { triviumRoute: { permissions: ['x:read'] } } }, async (request) => {
    const user: TriviumIdentity | undefined = triviumUser(request)
    return { userId: user?.userId ?? null, roles: user?.roles ?? [] }
  })
  app.get('/legacy/untouched', async () => ({ ok: true }))
  await app.ready()
  const token = (permissions: string[]) =>
    app.triviumAuth.issueAccessToken({
      id: 9,
      username: 'ivy',
      email: 'ivy@example.com',
      roles: ['member'],
      permissions,
    })
  return { app, token }
}

t.test(
  'a plain route at 2/min answers 200 200 429, with the rate-limit headers and error body',
  async (t) => {
    const { app } = await build()
    const codes: number[] = []
    let last: Awaited<ReturnType<typeof app.inject>> | undefined
    for (let i = 0; i < 3; i++) {
      last = await app.inject({ url: '/legacy/hello' })
      codes.push(last.statusCode)
    }
    t.same(codes, [200, 200, 429])
    const body = last!.json()
    t.equal(body.statusCode, 429)
    t.equal(body.error, 'RateLimitExceededException')
    t.type(body.requestId, 'string')
    t.ok(Number(last!.headers['retry-after']) > 0)
    t.equal(
      (await app.inject({ url: '/legacy/untouched' })).statusCode,
      200,
      'routes without the option are untouched',
    )
  },
)

t.test(
  'a plain route without a token is 401, with a token lacking the permission 403, else 200',
  async (t) => {
    const { app, token } = await build()
    let r = await app.inject({ url: '/legacy/report' })
    t.equal(r.statusCode, 401)
    t.match(r.json(), { statusCode: 401, error: 'UnauthorizedException', message: 'Authentication required' })
    t.type(r.json().requestId, 'string')
    t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
    r = await app.inject({
      url: '/legacy/report',
      headers: { authorization: `Bearer ${await token(['y:read'])}` },
    })
    t.equal(r.statusCode, 403)
    t.match(r.json(), { error: 'ForbiddenException', message: 'Insufficient permissions. Required: x:read' })
    r = await app.inject({
      url: '/legacy/report',
      headers: { authorization: `Bearer ${await token(['x:read'])}` },
    })
    t.equal(r.statusCode, 200)
    t.same(r.json(), { userId: 9, roles: ['member'] }, 'triviumUser(request) is the identity')
    t.ok(r.headers['x-ratelimit-limit'], 'the default limit applies to a protected route')
  },
)

t.test('a bad triviumRoute option is refused when the route is added', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  t.throws(() => app.get('/x', { config: { triviumRoute: 'yes' as never } }, async () => ({})), {
    code: 'TRV_AUTH_ROUTE_RULES',
    message: '@trivium/auth: route GET /x: config.triviumRoute must be an object',
  })
})

t.test('a protected route in a child context runs the scoped middleware of that context only', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.register(
    async (child) => {
      child.trivium.use((call, next) => {
        call.setHeader('x-scope', 'v1')
        return next()
      })
      child.get('/legacy', { config: { triviumRoute: { auth: 'public' } } }, async () => ({ ok: true }))
    },
    { prefix: '/v1' },
  )
  app.get('/legacy', { config: { triviumRoute: { auth: 'public' } } }, async () => ({ ok: true }))
  await app.ready()
  t.equal((await app.inject({ url: '/v1/legacy' })).headers['x-scope'], 'v1')
  t.equal((await app.inject({ url: '/legacy' })).headers['x-scope'], undefined)
})

t.test('a route with the option that nothing can guard refuses to start, naming the fix', async (t) => {
  // Added before any Trivium plugin, with no auth plugin at all: no onRoute hook saw it, so core's
  // fallback refuses every request to it (500, the error body), never serving it unguarded.
  const before = Fastify()
  t.teardown(() => before.close())
  before.get('/early', { config: { triviumRoute: {} } }, async () => ({ ok: true }))
  await before.register(trivium)
  await before.ready()
  const refused = await before.inject({ url: '/early' })
  t.equal(refused.statusCode, 500)
  t.equal(refused.json().message, 'Internal server error')

  const noAuth = Fastify()
  t.teardown(() => noAuth.close())
  await noAuth.register(trivium)
  noAuth.get('/open', { config: { triviumRoute: {} } }, async () => ({ ok: true }))
  await t.rejects(async () => noAuth.ready(), {
    message:
      '@trivium/core: route GET /open has config.triviumRoute, but no route guard enforces it: register @trivium/auth before the route (in its context or an ancestor)',
  })

  // The guard runs the chain, but without the auth middleware nothing checks the token.
  const noMiddleware = Fastify()
  t.teardown(() => noMiddleware.close())
  await noMiddleware.register(trivium)
  await noMiddleware.register(triviumAuth, { secret: SECRET, issuer: ISSUER, middleware: false })
  noMiddleware.get('/open', { config: { triviumRoute: {} } }, async () => ({ ok: true }))
  await t.rejects(async () => noMiddleware.ready(), {
    message:
      '@trivium/core: route GET /open declares auth: "required", but no middleware enforces "auth" where it is registered: register @trivium/auth in this context or an ancestor',
  })
})

t.test('permissions or roles on a plain route without @trivium/rbac refuse to start', async (t) => {
  for (const rule of [{ permissions: ['admin:all'] }, { roles: ['admin'] }]) {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
    app.get('/admin', { config: { triviumRoute: rule } }, async () => ({ ok: true }))
    const [key, value] = Object.entries(rule)[0] as [string, string[]]
    await t.rejects(async () => app.ready(), {
      message: `@trivium/core: route GET /admin declares ${key}: ${JSON.stringify(value)}, but no middleware enforces "${key}" where it is registered: register @trivium/rbac in this context or an ancestor`,
    })
  }
})

t.test('a misspelt or malformed triviumRoute setting is refused, with the closest name', async (t) => {
  const typo = Fastify()
  t.teardown(() => typo.close())
  await typo.register(trivium)
  await typo.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  typo.get('/x', { config: { triviumRoute: { permisions: ['admin:all'] } as never } }, async () => ({}))
  await t.rejects(async () => typo.ready(), {
    message:
      '@trivium/core: route GET /x: unknown setting "permisions" (did you mean "permissions"?). A setting read by your own middleware is declared with enforcesSettings(["permisions"], middleware).',
  })

  const mode = Fastify()
  t.teardown(() => mode.close())
  await mode.register(trivium)
  await mode.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  t.throws(() => mode.get('/x', { config: { triviumRoute: { auth: 'maybe' as never } } }, async () => ({})), {
    code: 'TRV_AUTH_ROUTE_MODE',
    message:
      '@trivium/auth: route GET /x: config.triviumRoute.auth must be one of public, optional, required, got "maybe"',
  })
})

t.test(
  "routes without the option get no guard; the guard runs before the app's preHandler hooks",
  async (t) => {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
    const seenUser: unknown[] = []
    app.addHook('preHandler', async (request) => {
      seenUser.push(triviumUser(request)?.userId)
    })
    app.get('/guarded', { config: { triviumRoute: {} } }, async () => ({ ok: true }))
    app.get('/plain', async () => ({ ok: true }))
    await app.ready()
    const hooks = app.printRoutes({ includeHooks: true, commonPrefix: false })
    const section = (path: string) =>
      hooks
        .slice(hooks.indexOf(`${path} (GET`))
        .split('\n')
        .slice(0, 6)
        .join('\n')
    t.match(section('/guarded'), /\(preValidation\) \["guard\(\)"\]/)
    t.notMatch(section('/plain'), /preValidation/, 'a route without the option has no guard hook')
    t.equal((await app.inject({ url: '/guarded' })).statusCode, 401)
    const token = await app.triviumAuth.issueAccessToken({ id: 4, username: 'u', email: 'u@example.com' })
    const ok = await app.inject({ url: '/guarded', headers: { authorization: `Bearer ${token}` } })
    t.equal(ok.statusCode, 200)
    t.same(seenUser, [4], "the app's preHandler saw the caller")
  },
)

t.test('a route added before the plugins is guarded by the fallback', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/early', { config: { triviumRoute: {} } }, async (request) => ({
    user: triviumUser(request)?.userId,
  }))
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.ready()
  t.equal((await app.inject({ url: '/early' })).statusCode, 401)
  const token = await app.triviumAuth.issueAccessToken({ id: 9, username: 'u', email: 'u@example.com' })
  const ok = await app.inject({ url: '/early', headers: { authorization: `Bearer ${token}` } })
  t.same(ok.json(), { user: 9 })
})

// Issue 43 item 6: whether a route was added before core is not read from printRoutes() (a drawing, not an
// API): a Fastify that draws its tree differently (here: one that says it is empty) changes nothing.
t.test('a route added before the plugins is guarded whatever printRoutes() draws', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/early', { config: { triviumRoute: {} } }, async () => ({ open: true }))
  app.printRoutes = () => '(empty tree)'
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.ready()
  const res = await app.inject({ url: '/early' })
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'TRV_UNAUTHORIZED')
})

t.test("a child context's auth does not guard a route added before core: it stays refused", async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/early', { config: { triviumRoute: {} } }, async () => ({ open: true }))
  await app.register(trivium)
  await app.register(async (child) => {
    await child.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  })
  await app.ready()
  // The child's chain is not the route's: no auth runs for it, so it fails closed (500), never 200.
  const res = await app.inject({ url: '/early' })
  t.equal(res.statusCode, 500)
  t.match(res.json(), { statusCode: 500, code: 'TRV_INTERNAL' })
})
