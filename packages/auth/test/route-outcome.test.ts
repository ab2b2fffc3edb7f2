// A guarded plain route's `next()`: a middleware that reads it (not `directMiddleware`) gets the route's
// RouteOutcome once the response is sent; a chain of direct middleware only, which reads nothing, gets
// `undefined` as the route goes on (no promise and no `close` listener per request: issue 41, item 5).
import triviumAuth from '@trivium/auth'
import trivium, { directMiddleware } from '@trivium/core'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { ISSUER, SECRET } from './helpers.js'

async function appWith(use: (app: FastifyInstance) => void) {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  use(app)
  app.get('/legacy', { config: { triviumRoute: { auth: 'public' } } }, async (_request, reply) => {
    reply.code(201)
    return { ok: true }
  })
  await app.ready()
  return app
}

t.test('an observer gets the RouteOutcome once the response is sent', async (t) => {
  let seen: (outcome: unknown) => void = () => {}
  const outcome = new Promise((resolve) => {
    seen = resolve
  })
  const app = await appWith((a) =>
    a.trivium.use(async (_call, next) => {
      seen(await next())
    }),
  )
  t.teardown(() => app.close())
  const res = await app.inject({ url: '/legacy' })
  t.same([res.statusCode, res.body], [201, '{"ok":true}'])
  t.same(await outcome, { statusCode: 201 })
})

t.test('direct middleware only: next() is undefined, the route answers as before', async (t) => {
  const values: unknown[] = []
  const app = await appWith((a) =>
    a.trivium.use(
      directMiddleware((_call, next) => {
        const value = next()
        values.push(value)
        return value
      }),
    ),
  )
  t.teardown(() => app.close())
  const res = await app.inject({ url: '/legacy' })
  t.same([res.statusCode, res.body], [201, '{"ok":true}'])
  t.same(values, [undefined])
})
