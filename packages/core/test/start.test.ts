// trivium.start: invoke without its promise (frame transports). Same call, same pipeline, same errors;
// a value comes back as a value when nothing on the way is asynchronous.
import trivium, { NotFoundException, ValidationException } from '@trivium/core'
import Fastify from 'fastify'
import t from 'tap'

async function app(withMiddleware: boolean) {
  const fastify = Fastify()
  await fastify.register(trivium)
  if (withMiddleware) {
    fastify.trivium.use(async (call, next) => {
      call.context.seen = true
      return next()
    })
  }
  fastify.trivium.endpoint('sync.echo', { method: 'POST', url: '/echo' }, (req: { a?: number }, call) => ({
    a: req.a,
    seen: call.context.seen === true,
  }))
  fastify.trivium.endpoint('async.echo', { method: 'POST', url: '/aecho' }, async (req: { a?: number }) => ({
    a: req.a,
  }))
  await fastify.ready()
  return fastify
}

function init(fastify: Awaited<ReturnType<typeof app>>, endpoint: string, body: string) {
  return {
    endpoint,
    protocol: 'websocket' as const,
    payload: new TextEncoder().encode(body),
    format: fastify.trivium.formats.get('json')!,
    requestId: 'c:1',
    log: fastify.log,
  }
}

t.test('no middleware, synchronous handler: the value itself', async (t) => {
  const fastify = await app(false)
  const started = fastify.trivium.start(init(fastify, 'sync.echo', '{"a":1}'))
  t.same(started.result, { a: 1, seen: false })
  t.equal(started.call.endpoint, 'sync.echo')
  t.equal(started.call.protocol, 'websocket')
  t.same(await fastify.trivium.start(init(fastify, 'async.echo', '{"a":2}')).result, { a: 2 })
  t.same(fastify.trivium.start(init(fastify, 'sync.echo', '{}')).result, { a: undefined, seen: false })
})

t.test('with middleware: a promise of the same value', async (t) => {
  const fastify = await app(true)
  const started = fastify.trivium.start(init(fastify, 'sync.echo', '{"a":3}'))
  t.ok(started.result instanceof Promise)
  t.same(await started.result, { a: 3, seen: true })
  const invoked = await fastify.trivium.invoke(init(fastify, 'sync.echo', '{"a":3}'))
  t.same(invoked.result, { a: 3, seen: true }, 'invoke gives the same')
})

t.test('an unknown endpoint throws at once; a bad body rejects the result', async (t) => {
  const fastify = await app(true)
  t.throws(
    () => fastify.trivium.start(init(fastify, 'nope', '{}')),
    new NotFoundException('Unknown endpoint: nope'),
  )
  await t.rejects(fastify.trivium.invoke(init(fastify, 'nope', '{}')), { message: 'Unknown endpoint: nope' })
  await t.rejects(
    fastify.trivium.start(init(fastify, 'sync.echo', '{"a":')).result as Promise<unknown>,
    new ValidationException('Request body is not valid JSON'),
  )
})
