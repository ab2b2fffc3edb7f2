// Issue 14 items 2 and 4: endpoints follow Fastify's encapsulation over HTTP; names stay one namespace;
// an application's own not-found handler is met with an error that names the fix.
import trivium, { UnauthorizedException } from '@trivium/core'
import Fastify from 'fastify'
import t from 'tap'

t.test(
  "an endpoint registered in a child context gets the child's prefix, hooks and decorators",
  async (t) => {
    const app = Fastify()
    await app.register(trivium)
    const seen: string[] = []
    app.trivium.endpoint('root.hello', { method: 'GET', url: '/hello' }, () => ({ where: 'root' }))
    await app.register(
      async (child) => {
        child.decorate('greeting', 'hi from v1')
        child.addHook('onRequest', async (request) => {
          seen.push(`v1 hook ${request.url}`)
        })
        child.trivium.endpoint('v1.hello', { method: 'GET', url: '/hello' }, (_req, call) => ({
          where: 'v1',
          greeting: (call.raw as { server: { greeting: string } } | undefined)?.server.greeting,
        }))
        child.trivium.endpoint('v1.root', { method: 'GET', url: '/' }, () => ({ where: 'v1 root' }))
      },
      { prefix: '/v1' },
    )
    const v1 = await app.inject('/v1/hello')
    t.equal(v1.statusCode, 200)
    t.same(v1.json(), { where: 'v1', greeting: 'hi from v1' })
    t.same((await app.inject('/v1')).json(), { where: 'v1 root' })
    t.same((await app.inject('/hello')).json(), { where: 'root' })
    t.same(seen, ['v1 hook /v1/hello', 'v1 hook /v1'], "the child's hook ran for its endpoints only")
    const definition = app.trivium.registry.get('v1.hello')!
    t.equal(definition.url, '/v1/hello', 'the definition knows its full URL')
    const bridged = definition.http.toHttp({})
    t.same(
      [bridged.method, bridged.url],
      ['GET', '/v1/hello'],
      'a bridge (TCP inject) builds the prefixed URL',
    )
    t.equal((await app.inject({ method: bridged.method, url: bridged.url })).statusCode, 200)
    const { result } = await app.trivium.invoke({
      endpoint: 'v1.hello',
      protocol: 'websocket',
      payload: new Uint8Array(),
      format: app.trivium.formats.get('json')!,
      requestId: 'c:1',
      log: app.log,
    })
    t.same(result, { where: 'v1', greeting: undefined }, 'frames reach it by name')
  },
)

t.test('names are one namespace across contexts: a duplicate is refused', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({}))
  await t.rejects(
    async () => {
      await app.register(
        async (child) => {
          child.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({}))
        },
        { prefix: '/v2' },
      )
    },
    { message: '@trivium/core: endpoint "hello" is already registered' },
  )
})

t.test(
  "an application's own not-found handler: kept by default, named by notFoundHandler: true",
  async (t) => {
    const app = Fastify()
    app.setNotFoundHandler((_req, reply) => reply.code(404).send({ mine: true }))
    await t.rejects(
      async () => {
        await app.register(trivium, { notFoundHandler: true })
      },
      {
        message:
          '@trivium/core: the application already has a not-found handler (setNotFoundHandler); register @trivium/core without notFoundHandler (its default, false) to keep it',
      },
    )
    const ok = Fastify()
    ok.setNotFoundHandler((_req, reply) => reply.code(404).send({ mine: true }))
    await ok.register(trivium)
    t.same((await ok.inject('/nowhere')).json(), { mine: true })
  },
)

t.test('middleware added in a child context runs for that context and its descendants only', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  const ran: string[] = []
  app.trivium.use(async (call, next) => {
    ran.push(`global ${call.definition.name}`)
    return next()
  })
  app.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({ ok: 'open' }))
  await app.register(
    async (admin) => {
      admin.trivium.use(
        async (call, next) => {
          ran.push(`admin ${call.definition.name}`)
          if (call.protocol === 'http' && !call.headers.authorization) {
            throw new UnauthorizedException('Authentication required')
          }
          return next()
        },
        { name: 'admin-guard' },
      )
      admin.trivium.endpoint('admin.stats', { method: 'GET', url: '/stats' }, () => ({ ok: 'stats' }))
      await admin.register(async (deeper) => {
        deeper.trivium.endpoint('admin.deep', { method: 'GET', url: '/deep' }, () => ({ ok: 'deep' }))
      })
    },
    { prefix: '/admin' },
  )
  await app.register(async (sibling) => {
    sibling.trivium.endpoint('sibling', { method: 'GET', url: '/sibling' }, () => ({ ok: 'sibling' }))
  })
  t.equal((await app.inject('/open')).statusCode, 200)
  t.equal((await app.inject('/sibling')).statusCode, 200)
  const guarded = await app.inject('/admin/stats')
  t.equal(guarded.statusCode, 401)
  t.equal(guarded.json().message, 'Authentication required')
  t.equal((await app.inject('/admin/deep')).statusCode, 401, 'descendants are guarded too')
  t.equal((await app.inject({ url: '/admin/deep', headers: { authorization: 'Bearer x' } })).statusCode, 200)
  const { result } = await app.trivium.invoke({
    endpoint: 'admin.stats',
    protocol: 'websocket',
    payload: new Uint8Array(),
    format: app.trivium.formats.get('json')!,
    requestId: 'c:1',
    log: app.log,
  })
  t.same(result, { ok: 'stats' })
  t.same(ran, [
    'global open',
    'global sibling',
    'global admin.stats',
    'admin admin.stats',
    'global admin.deep',
    'admin admin.deep',
    'global admin.deep',
    'admin admin.deep',
    'global admin.stats',
    'admin admin.stats',
  ])
})

t.test('a middleware name is unique per chain of contexts: siblings may each have one', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  const ran: string[] = []
  const named =
    (label: string) => async (call: { definition: { name: string } }, next: () => Promise<unknown>) => {
      ran.push(`${label} ${call.definition.name}`)
      return next()
    }
  // An app-wide middleware that needs "auth" counts each context's own.
  app.trivium.use(named('rbac'), { name: 'rbac', after: ['auth'] })
  for (const name of ['a', 'b']) {
    await app.register(
      async (child) => {
        child.trivium.use(named(`auth-${name}`), { name: 'auth', first: true })
        child.trivium.endpoint(`${name}.hello`, { method: 'GET', url: '/hello' }, () => ({ name }))
      },
      { prefix: `/${name}` },
    )
  }
  await app.ready()
  t.same((await app.inject('/a/hello')).json(), { name: 'a' })
  t.same((await app.inject('/b/hello')).json(), { name: 'b' })
  t.same(ran, ['auth-a a.hello', 'rbac a.hello', 'auth-b b.hello', 'rbac b.hello'])

  const refusal =
    '@trivium/core: a middleware named "auth" is already registered in this context, an enclosing one or one inside it: register one per context chain (e.g. each @trivium/auth in its own sibling context, none above them)'
  const nested = Fastify()
  await nested.register(trivium)
  nested.trivium.use(async (_c, next) => next(), { name: 'auth' })
  await t.rejects(
    async () => {
      await nested.register(async (child) => {
        child.trivium.use(async (_c, next) => next(), { name: 'auth' })
      })
    },
    { name: 'MiddlewareOrderError', message: refusal },
    'a context inside one that has "auth"',
  )
  const outer = Fastify()
  await outer.register(trivium)
  await outer.register(async (child) => {
    child.trivium.use(async (_c, next) => next(), { name: 'auth' })
  })
  t.throws(
    () => outer.trivium.use(async (_c, next) => next(), { name: 'auth' }),
    { message: refusal },
    'a context enclosing one that has "auth"',
  )

  const late = Fastify()
  await late.register(trivium)
  late.trivium.use(async (_c, next) => next(), { name: 'rbac', after: ['auth'] })
  await late.register(async (child) => {
    child.trivium.use(async (_c, next) => next(), { name: 'auth' })
  })
  await t.rejects(async () => late.ready(), {
    message: '@trivium/core: "rbac" must be registered after "auth"',
  })
})
