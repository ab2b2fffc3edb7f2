// Existing Fastify routes under the same auth, RBAC and rate-limit rules as endpoints
// (`config.triviumRoute`), with the caller as `request.user`.
import { randomBytes } from 'node:crypto'
import triviumAuth from '@trivium/auth'
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
  // Registered before any Trivium plugin: still guarded (the guard is an app-wide preHandler).
  app.get('/legacy/early', { config: { triviumRoute: {} } }, async (request) => ({
    user: request.user?.userId,
  }))
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
    const user: TriviumIdentity | undefined = request.user
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
    t.same(r.json(), { userId: 9, roles: ['member'] }, 'request.user is the identity')
    t.ok(r.headers['x-ratelimit-limit'], 'the default limit applies to a protected route')
    t.equal((await app.inject({ url: '/legacy/early' })).statusCode, 401, 'a route added before the plugins')
    r = await app.inject({ url: '/legacy/early', headers: { authorization: `Bearer ${await token([])}` } })
    t.same(r.json(), { user: 9 })
  },
)

t.test('a bad triviumRoute option is refused when the route is added', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  t.throws(() => app.get('/x', { config: { triviumRoute: 'yes' as never } }, async () => ({})), {
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

t.test(
  "the guard reads each route's own config, through Fastify's route context or the public getter",
  async (t) => {
    const { routeConfigReader } = await import('@trivium/auth/internal')
    const app = Fastify()
    t.teardown(() => app.close())
    const read = routeConfigReader()
    const seen: unknown[] = []
    let getterCalls = 0
    app.addHook('preHandler', async (request) => {
      const expected = request.routeOptions.config
      // Count the public getter's uses from here on (it builds a new object each time).
      Object.defineProperty(request, 'routeOptions', {
        get: () => {
          getterCalls++
          return { config: expected }
        },
      })
      // The same object as the public getter's, request after request and route after route.
      seen.push(read(request) === expected)
    })
    app.get('/a', { config: { triviumRoute: { auth: 'public', name: 'a' } } }, async () => ({}))
    app.get('/b', async () => ({}))
    await app.ready()
    for (const url of ['/a', '/b', '/a', '/b', '/missing']) await app.inject({ url })
    t.same(seen, [true, true, true, true, true])
    t.equal(getterCalls, 1, 'only the first request used the public getter')

    // A Fastify build without the internal symbol (or holding something else there): the public getter.
    const config = { triviumRoute: { name: 'plain' } }
    const plain = { routeOptions: { config } } as never
    const other = { [Symbol('fastify.context')]: { config: {} }, routeOptions: { config } } as never
    const fallback = routeConfigReader()
    t.equal(fallback(plain), config)
    t.equal(fallback(plain), config)
    const mismatch = routeConfigReader()
    t.equal(mismatch(other), config)
    t.equal(mismatch(other), config, 'a symbol whose config is not the route config is never used')
  },
)
