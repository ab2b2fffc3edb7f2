// directMiddleware: a middleware that hands on next()'s value as it is keeps a synchronous chain
// synchronous; every other middleware still gets a promise from next(), and errors travel as before.
import trivium, {
  directMiddleware,
  ForbiddenException,
  type Middleware,
  type TriviumCall,
} from '@trivium/core'
import { jsonFormat, Pipeline } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

const call = { definition: { name: 'x' } } as unknown as TriviumCall<any>
const handler = () => ({ ok: true })

t.test('direct middleware and a synchronous handler: the value itself, in this turn', async (t) => {
  const pipeline = new Pipeline()
  const seen: string[] = []
  pipeline.use(
    directMiddleware((_c, next) => {
      seen.push('a')
      return next()
    }),
  )
  pipeline.use(
    directMiddleware((_c, next) => {
      seen.push('b')
      return next()
    }),
  )
  const result = pipeline.run(call, handler)
  t.same(result, { ok: true })
  t.notOk(result instanceof Promise)
  t.same(seen, ['a', 'b'])
})

t.test('an asynchronous handler: a direct middleware hands on its promise', async (t) => {
  const pipeline = new Pipeline()
  pipeline.use(directMiddleware((_c, next) => next()))
  const result = pipeline.run(call, async () => 'later')
  t.ok(result instanceof Promise)
  t.equal(await result, 'later')
})

t.test(
  'any other middleware gets a promise from next(), even from direct steps and a sync handler',
  async (t) => {
    const pipeline = new Pipeline()
    let fromNext: unknown
    const plain: Middleware = (_c, next) => {
      fromNext = next()
      return fromNext
    }
    pipeline.use(directMiddleware((_c, next) => next()))
    pipeline.use(plain)
    pipeline.use(directMiddleware((_c, next) => next()))
    const result = pipeline.run(call, handler)
    t.ok(fromNext instanceof Promise, 'next() of a plain middleware is a promise')
    t.same(await fromNext, { ok: true })
    t.same(await result, { ok: true })
  },
)

t.test(
  'a throw after a plain middleware is its rejection; with only direct steps it throws from run',
  async (t) => {
    const denied = new ForbiddenException('no')
    const thrower = directMiddleware(() => {
      throw denied
    })
    const guarded = new Pipeline()
    let caught: unknown
    guarded.use(async (_c, next) => {
      try {
        return await next()
      } catch (err) {
        caught = err
        return 'handled'
      }
    })
    guarded.use(thrower)
    t.equal(await guarded.run(call, handler), 'handled')
    t.equal(caught, denied)

    const bare = new Pipeline()
    bare.use(directMiddleware((_c, next) => next()))
    bare.use(thrower)
    t.throws(() => bare.run(call, handler), denied)
  },
)

t.test('a direct middleware that throws reaches every transport as the same typed error', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.use(
    directMiddleware((c, next) => {
      if (c.endpoint === 'closed') throw new ForbiddenException('Closed')
      return next()
    }),
  )
  fastify.trivium.endpoint('closed', { method: 'GET', url: '/closed' }, () => ({}))
  fastify.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({ open: true }))
  await fastify.ready()
  const http = await fastify.inject({ method: 'GET', url: '/closed' })
  t.equal(http.statusCode, 403)
  t.same(
    { ...http.json(), requestId: undefined },
    {
      statusCode: 403,
      code: 'TRV_FORBIDDEN',
      error: 'ForbiddenException',
      message: 'Closed',
      requestId: undefined,
    },
  )
  t.same((await fastify.inject({ method: 'GET', url: '/open' })).json(), { open: true })
  const init = (endpoint: string) => ({
    endpoint,
    protocol: 'websocket' as const,
    payload: new Uint8Array(0),
    format: jsonFormat,
    requestId: 'c:1',
    log: fastify.log,
  })
  t.throws(() => fastify.trivium.start(init('closed')), { message: 'Closed', statusCode: 403 })
  await t.rejects(fastify.trivium.invoke(init('closed')), { message: 'Closed', statusCode: 403 })
  t.same(fastify.trivium.start(init('open')).result, { open: true })
  await fastify.close()
})
