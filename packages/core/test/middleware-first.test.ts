// `first: true` puts an observer (metrics, tracing, access log) ahead of every other middleware, whatever
// the registration order, so it sees calls that auth or rate-limit refuse.
import trivium, { ForbiddenException, type Middleware } from '@trivium/core'
import Fastify from 'fastify'
import t from 'tap'

t.test('first middleware run before the others, in their own registration order', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  const trace: string[] = []
  const mw =
    (name: string): Middleware =>
    async (_call, next) => {
      trace.push(name)
      return next()
    }
  fastify.trivium.use(mw('auth'), { name: 'auth' })
  fastify.trivium.use(async () => {
    trace.push('deny')
    throw new ForbiddenException('no')
  })
  fastify.trivium.use(mw('metrics'), { name: 'metrics', first: true })
  fastify.trivium.use(mw('tracing'), { first: true })
  fastify.trivium.endpoint('e', { method: 'GET', url: '/e' }, () => 1)
  await fastify.ready()
  t.same(fastify.trivium.pipeline.names(), ['metrics', '(anonymous)', 'auth', '(anonymous)'])
  const res = await fastify.inject('/e')
  t.equal(res.statusCode, 403)
  t.same(trace, ['metrics', 'tracing', 'auth', 'deny'])
})
