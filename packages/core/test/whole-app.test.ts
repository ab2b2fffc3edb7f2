// Issue 40 items 1 and 9: whole-app answers are the application's to ask for, never an error handler of
// its own replaced; and every refusal of @trivium/core at start reaches ready()/listen() as a rejection
// (the process stays up, the application decides), never an exception thrown out of a hook.
import trivium from '@trivium/core'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import t from 'tap'

const mine = (_err: Error, _request: unknown, reply: FastifyReply) => reply.code(418).send({ mine: true })

t.test("errorHandler: true over an application's own error handler is refused, naming the fix", async (t) => {
  const message =
    '@trivium/core: the application already has an error handler (setErrorHandler), which errorHandler: true would replace: register @trivium/core without errorHandler (its default, false) to keep it; endpoints and routes with config.triviumRoute answer in the Trivium error body either way'
  const root = Fastify()
  root.setErrorHandler(mine)
  await t.rejects(async () => root.register(trivium, { errorHandler: true }).ready(), { message })
  // Set in an ancestor of the context core is registered in: the same.
  const ancestor = Fastify()
  ancestor.setErrorHandler(mine)
  ancestor.register(async (child: FastifyInstance) => {
    await child.register(trivium, { errorHandler: true })
  })
  await t.rejects(async () => ancestor.ready(), { message })
  // By default it is kept, and answers the application's routes.
  const guest = Fastify()
  guest.setErrorHandler(mine)
  await guest.register(trivium)
  guest.get('/fail', async () => {
    throw new Error('boom')
  })
  guest.trivium.endpoint('fail', { method: 'GET', url: '/endpoint' }, () => {
    throw new Error('boom')
  })
  t.teardown(() => guest.close())
  t.same((await guest.inject('/fail')).json(), { mine: true })
  t.equal((await guest.inject('/endpoint')).json().code, 'TRV_INTERNAL', 'an endpoint keeps its own')
  // Without one of the application's, the root handler is Trivium's.
  const owner = Fastify()
  await owner.register(trivium, { errorHandler: true })
  owner.get('/teapot', async () => {
    throw Object.assign(new Error('short and stout'), { statusCode: 418 })
  })
  t.teardown(() => owner.close())
  t.match((await owner.inject('/teapot')).json(), {
    statusCode: 418,
    code: 'TRV_VALIDATION',
    message: "I'm a Teapot",
    requestId: /^req-/,
  })
})

/** Each start-up refusal of @trivium/core, as an application can meet it: the app, set up. */
const REFUSALS: [string, () => FastifyInstance, RegExp | string][] = [
  [
    'a bad option',
    () => Fastify().register(trivium, { bodyLimit: -1 }),
    '@trivium/core: bodyLimit must be a positive integer (bytes)',
  ],
  [
    'a not-found handler of the application, with notFoundHandler: true',
    () => {
      const app = Fastify()
      app.setNotFoundHandler((_r, reply) => reply.code(404).send())
      return app.register(trivium, { notFoundHandler: true })
    },
    /already has a not-found handler/,
  ],
  [
    "Fastify's poisoning options changed",
    () => Fastify({ onProtoPoisoning: 'remove' }).register(trivium),
    /onProtoPoisoning must be 'error'/,
  ],
  [
    'an endpoint name registered twice in a plugin',
    () =>
      Fastify()
        .register(trivium)
        .register(async (child) => {
          child.trivium.endpoint('twice', { method: 'GET', url: '/a' }, () => ({}))
          child.trivium.endpoint('twice', { method: 'GET', url: '/b' }, () => ({}))
        }),
    '@trivium/core: endpoint "twice" is already registered',
  ],
  [
    'a middleware ordered after one that is not registered',
    () => {
      const app = Fastify().register(trivium)
      return app.after(() => app.trivium.use((_call, next) => next(), { name: 'rbac', after: ['auth'] }))
    },
    '@trivium/core: "rbac" needs "auth", which is not registered',
  ],
  [
    'a setting no middleware enforces',
    () => {
      const app = Fastify().register(trivium)
      return app.after(() => {
        app.trivium.endpoint('guarded', { method: 'GET', url: '/g', permissions: ['x'] } as never, () => ({}))
      })
    },
    /endpoint "guarded" declares permissions/,
  ],
  [
    'a route with config.triviumRoute and no route guard',
    () => {
      const app = Fastify().register(trivium)
      return app.after(() => {
        app.get('/legacy', { config: { triviumRoute: {} } as never }, async () => ({}))
      })
    },
    /route GET \/legacy has config.triviumRoute, but no route guard enforces it/,
  ],
]

t.test('every refusal at start rejects ready() and listen(); nothing escapes as an exception', async (t) => {
  const escaped: unknown[] = []
  const onUncaught = (err: unknown) => escaped.push(err)
  process.on('uncaughtException', onUncaught)
  t.teardown(() => process.off('uncaughtException', onUncaught))
  for (const [name, build, message] of REFUSALS) {
    for (const start of ['ready', 'listen'] as const) {
      const app = build()
      const started = async () =>
        start === 'ready' ? app.ready() : app.listen({ port: 0, host: '127.0.0.1' })
      await t.rejects(started, { message }, `${name}: ${start}()`)
      await app.close().catch(() => {})
    }
  }
  t.same(escaped, [], 'no uncaught exception')
})
