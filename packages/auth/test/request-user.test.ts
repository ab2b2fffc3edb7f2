// Issue 40 item 3: `config.triviumRoute` never overwrites `request.user`. Beside @fastify/jwt, or with an
// application hook that sets it, `request.user` is what it was without Trivium, on public, optional and
// required routes; the caller is `triviumUser(request)`. `requestUser: true` gives the name to Trivium
// (@fastify/jwt beside it is refused at start, in either order).
import fastifyJwt from '@fastify/jwt'
import triviumAuth, { triviumUser } from '@trivium/auth'
import trivium from '@trivium/core'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import t, { type Test } from 'tap'
import { ISSUER, SECRET } from './helpers.js'

type Mode = 'public' | 'optional' | 'required'
const MODES: Mode[] = ['public', 'optional', 'required']

/** What a route saw: `request.user` as it is ('undefined' when unset), and Trivium's caller. */
function seen(request: FastifyRequest) {
  const user: unknown = request.user
  return { user: user === undefined ? 'undefined' : user, trivium: triviumUser(request)?.userId ?? null }
}

async function listen(t: Test, app: FastifyInstance): Promise<string> {
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

async function get(base: string, path: string, token?: string) {
  const res = await fetch(`${base}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {})
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

/**
 * An existing service: @fastify/jwt with the secret Trivium signs with (a migration keeps it) and routes
 * that verify the token when one is sent; Trivium's plugins only when `withTrivium`.
 */
async function jwtService(t: Test, withTrivium: boolean) {
  const app = Fastify()
  await app.register(fastifyJwt, { secret: SECRET })
  if (withTrivium) {
    await app.register(trivium)
    await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  }
  for (const mode of MODES) {
    app.get(
      `/${mode}`,
      {
        config: { triviumRoute: { auth: mode } },
        onRequest: async (request) => {
          if (request.headers.authorization) await request.jwtVerify()
        },
      },
      async (request) => seen(request),
    )
  }
  return { app, base: await listen(t, app) }
}

t.test(
  'beside @fastify/jwt, request.user stays its own on public, optional and required routes',
  async (t) => {
    const before = await jwtService(t, false)
    const after = await jwtService(t, true)
    const token = await after.app.triviumAuth.issueAccessToken({ id: 4, username: 'rae', email: 'r@x.io' })
    const jwtOnly = after.app.jwt.sign({ sub: 'u1' })
    const jwtUser = { user_id: 4, sub: '4', username: 'rae', token_type: 'access', iss: ISSUER }

    for (const mode of MODES) {
      const old = await get(before.base, `/${mode}`, token)
      const now = await get(after.base, `/${mode}`, token)
      t.equal(now.status, 200, `${mode} with a Trivium token`)
      t.match(now.body.user, jwtUser, `${mode}: request.user is @fastify/jwt's payload`)
      t.same(now.body.user, old.body.user, `${mode}: the same request.user as without Trivium`)
      t.equal(now.body.trivium, mode === 'public' ? null : 4, `${mode}: triviumUser(request)`)
    }
    const anonymous = await get(after.base, '/public')
    t.same(
      anonymous,
      { status: 200, body: { user: null, trivium: null } },
      "public, no token: jwt's null stays",
    )
    t.same(await get(before.base, '/public'), anonymous, 'the same answer without Trivium')
    t.same(await get(after.base, '/optional'), { status: 200, body: { user: null, trivium: null } })
    const legacy = await get(after.base, '/public', jwtOnly)
    t.match(
      legacy,
      { status: 200, body: { user: { sub: 'u1' }, trivium: null } },
      'a jwt-only token on a public route',
    )
    t.same(legacy, await get(before.base, '/public', jwtOnly))
    t.match(await get(after.base, '/required'), {
      status: 401,
      body: { error: 'UnauthorizedException', message: 'Authentication required' },
    })
  },
)

t.test("an application hook's request.user is kept on public, optional and required routes", async (t) => {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  app.addHook('onRequest', async (request) => {
    ;(request as { user?: unknown }).user = { name: 'from-hook' }
  })
  for (const mode of MODES) {
    app.get(`/${mode}`, { config: { triviumRoute: { auth: mode } } }, async (request) => seen(request))
  }
  const base = await listen(t, app)
  const token = await app.triviumAuth.issueAccessToken({ id: 5, username: 'sol', email: 's@x.io' })
  for (const mode of MODES) {
    if (mode !== 'required') {
      t.same(
        await get(base, `/${mode}`),
        { status: 200, body: { user: { name: 'from-hook' }, trivium: null } },
        mode,
      )
    }
    t.same(
      await get(base, `/${mode}`, token),
      { status: 200, body: { user: { name: 'from-hook' }, trivium: mode === 'public' ? null : 5 } },
      `${mode} with a token`,
    )
  }
})

t.test('requestUser: true sets request.user to the caller, never over a value a hook set', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, requestUser: true })
  for (const mode of MODES) {
    app.get(`/${mode}`, { config: { triviumRoute: { auth: mode } } }, async (request) => ({
      ...seen(request),
      same: request.user === triviumUser(request),
    }))
  }
  app.get(
    '/hooked',
    {
      config: { triviumRoute: {} },
      onRequest: async (request) => {
        ;(request as { user?: unknown }).user = { name: 'from-hook' }
      },
    },
    async (request) => seen(request),
  )
  app.get('/plain', async (request) => seen(request))
  const base = await listen(t, app)
  const token = await app.triviumAuth.issueAccessToken({ id: 6, username: 'kai', email: 'k@x.io' })
  const identity = { userId: 6, username: 'kai', roles: [], permissions: [] }
  t.match(await get(base, '/required', token), {
    status: 200,
    body: { user: identity, trivium: 6, same: true },
  })
  t.match(await get(base, '/optional', token), {
    status: 200,
    body: { user: identity, trivium: 6, same: true },
  })
  for (const mode of ['public', 'optional'] as const) {
    t.same(
      await get(base, `/${mode}`),
      { status: 200, body: { user: 'undefined', trivium: null, same: true } },
      `${mode}, anonymous`,
    )
  }
  t.same(await get(base, '/public', token), {
    status: 200,
    body: { user: 'undefined', trivium: null, same: true },
  })
  t.same(await get(base, '/hooked', token), {
    status: 200,
    body: { user: { name: 'from-hook' }, trivium: 6 },
  })
  t.same(await get(base, '/plain', token), { status: 200, body: { user: 'undefined', trivium: null } })
})

t.test('requestUser: true beside @fastify/jwt is refused at start, in either order', async (t) => {
  const CONFLICT =
    '@trivium/auth: requestUser: true, but request.user is decorated by another plugin (@fastify/jwt?): leave requestUser off and read the caller with triviumUser(request)'
  for (const order of ['jwt first', 'jwt after', 'jwt in the route context'] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    if (order === 'jwt first') await app.register(fastifyJwt, { secret: SECRET })
    await app.register(trivium)
    await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, requestUser: true })
    if (order === 'jwt after') await app.register(fastifyJwt, { secret: SECRET })
    const routes = async (scope: FastifyInstance) => {
      if (order === 'jwt in the route context') await scope.register(fastifyJwt, { secret: SECRET })
      scope.get('/r', { config: { triviumRoute: {} } }, async () => ({}))
    }
    await t.rejects(
      async () => {
        await app.register(async (scope) => routes(scope))
        await app.ready()
      },
      { message: CONFLICT },
      order,
    )
  }
  const bad = Fastify()
  t.teardown(() => bad.close())
  await bad.register(trivium)
  await t.rejects(
    async () => {
      await bad.register(triviumAuth, { secret: SECRET, issuer: ISSUER, requestUser: 'yes' as never })
    },
    { code: 'TRV_AUTH_REQUEST_USER', message: '@trivium/auth: requestUser must be a boolean' },
  )
})
