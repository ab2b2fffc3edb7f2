import trivium, { ForbiddenException, type Middleware, MiddlewareOrderError } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  return fastify
}

t.test('middleware runs before and after the handler, in registration order', async (t) => {
  const fastify = await app()
  const trace: string[] = []
  const mw =
    (name: string): Middleware =>
    async (call, next) => {
      trace.push(`${name}:before`)
      call.context[name] = true
      const result = await next()
      trace.push(`${name}:after`)
      return result
    }
  fastify.trivium.use(mw('a'))
  fastify.trivium.use(mw('b'))
  fastify.trivium.endpoint('echo', { method: 'GET', url: '/echo' }, (_req, call) => {
    trace.push('handler')
    return { seen: Object.keys(call.context) }
  })
  const res = await fastify.inject('/echo')
  t.equal(res.statusCode, 200)
  t.same(res.json(), { seen: ['a', 'b'] })
  t.same(trace, ['a:before', 'b:before', 'handler', 'b:after', 'a:after'])
})

t.test('middleware can change the response after next()', async (t) => {
  const fastify = await app()
  fastify.trivium.use(async (_call, next) => ({ wrapped: await next() }))
  fastify.trivium.endpoint('v', { method: 'GET', url: '/v' }, () => 1)
  t.same((await fastify.inject('/v')).json(), { wrapped: 1 })
})

t.test('a middleware short-circuits by returning without next()', async (t) => {
  const fastify = await app()
  let handlerRan = false
  let laterRan = false
  fastify.trivium.use(async (call) => ({ cached: call.endpoint }))
  fastify.trivium.use(async (_call, next) => {
    laterRan = true
    return next()
  })
  fastify.trivium.endpoint('x', { method: 'GET', url: '/x' }, () => {
    handlerRan = true
    return {}
  })
  const res = await fastify.inject('/x')
  t.same(res.json(), { cached: 'x' })
  t.notOk(handlerRan)
  t.notOk(laterRan)
})

t.test('a middleware aborts by throwing; the error reaches the client in the common shape', async (t) => {
  const fastify = await app()
  fastify.trivium.use(async () => {
    throw new ForbiddenException('Insufficient roles. Required: admin')
  })
  fastify.trivium.endpoint('x', { method: 'GET', url: '/x' }, () => ({}))
  const res = await fastify.inject('/x')
  t.equal(res.statusCode, 403)
  t.same(res.json(), {
    statusCode: 403,
    code: 'TRV_FORBIDDEN',
    error: 'ForbiddenException',
    message: 'Insufficient roles. Required: admin',
    requestId: res.json().requestId,
  })
  // A synchronous throw is handled the same way.
  const sync = await app()
  sync.trivium.use(() => {
    throw new ForbiddenException('nope')
  })
  sync.trivium.endpoint('x', { method: 'GET', url: '/x' }, () => ({}))
  t.equal((await sync.inject('/x')).statusCode, 403)
})

t.test('the same chain runs for frame transports through invoke()', async (t) => {
  const fastify = await app()
  const seen: string[] = []
  fastify.trivium.use(async (call, next) => {
    seen.push(`${call.protocol}:${call.endpoint}:${call.metadata.auth_token ?? ''}`)
    return next()
  })
  fastify.trivium.endpoint('sum', { method: 'POST', url: '/sum' }, (req: { a: number; b: number }) => ({
    sum: req.a + req.b,
  }))
  await fastify.ready()
  const out = await fastify.trivium.invoke({
    endpoint: 'sum',
    protocol: 'tcp',
    payload: Buffer.from('{"a":2,"b":3}'),
    format: jsonFormat,
    requestId: 'c1:1',
    log: fastify.log,
    metadata: { auth_token: 't' },
  })
  t.same(out.result, { sum: 5 })
  await fastify.inject({ method: 'POST', url: '/sum', payload: { a: 1, b: 1 } })
  t.same(seen, ['tcp:sum:t', 'http:sum:'])
})

t.test('order constraints fail loudly at start-up', async (t) => {
  const fastify = await app()
  fastify.trivium.use(async (_c, next) => next(), { name: 'rbac', after: ['auth'] })
  fastify.trivium.use(async (_c, next) => next(), { name: 'auth' })
  await t.rejects(async () => fastify.ready(), {
    name: 'MiddlewareOrderError',
    message: '@trivium/core: "rbac" must be registered after "auth"',
  })

  const missing = await app()
  missing.trivium.use(async (_c, next) => next(), { name: 'rbac', after: ['auth'] })
  await t.rejects(async () => missing.ready(), {
    message: '@trivium/core: "rbac" needs "auth", which is not registered',
  })

  const dup = await app()
  dup.trivium.use(async (_c, next) => next(), { name: 'auth' })
  t.throws(() => dup.trivium.use(async (_c, next) => next(), { name: 'auth' }), MiddlewareOrderError)

  const ok = await app()
  ok.trivium.use(async (_c, next) => next(), { name: 'auth' })
  ok.trivium.use(async (_c, next) => next(), { name: 'rbac', after: ['auth'] })
  await ok.ready()
  t.same(ok.trivium.pipeline.names(), ['auth', 'rbac'])
})

t.test('the body is decoded after middleware, so middleware answers before validation', async (t) => {
  const fastify = await app()
  const { UnauthorizedException, jsonSchemaModel } = await import('@trivium/core')
  fastify.trivium.use(async (call, next) => {
    if (call.headers.authorization !== 'Bearer ok') throw new UnauthorizedException('Authentication required')
    return next()
  })
  const Model = jsonSchemaModel('Thing', {
    type: 'object',
    properties: { n: { type: 'integer' } },
    required: ['n'],
  })
  fastify.trivium.endpoint('thing', { method: 'POST', url: '/thing', request: Model }, (req) => req)
  const anon = await fastify.inject({ method: 'POST', url: '/thing', payload: { n: 'x' } })
  t.equal(anon.statusCode, 401)
  t.equal(anon.json().message, 'Authentication required')
  const authed = await fastify.inject({
    method: 'POST',
    url: '/thing',
    payload: { n: 'x' },
    headers: { authorization: 'Bearer ok' },
  })
  t.equal(authed.statusCode, 400)
  t.equal(authed.json().code, 'TRV_VALIDATION')
})
