// Issue 41 item 1: a named Fastify route (`config.triviumRoute.name`) is an HTTP route already; the
// document lists it once, as its endpoint: operationId its name, parameters and body from its schema.
import trivium from '@trivium/core'
import { buildOpenApi } from '@trivium/openapi'
import Fastify from 'fastify'
import t from 'tap'
import { problemsOf } from './helpers.js'

t.test('a named route appears once, its name as operationId', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  t.teardown(() => fastify.close())
  fastify.post(
    '/shops/:shop/orders',
    {
      schema: {
        params: { type: 'object', properties: { shop: { type: 'string' } }, required: ['shop'] },
        body: {
          type: 'object',
          properties: { item: { type: 'string' }, quantity: { type: 'integer' } },
          required: ['item', 'quantity'],
        },
        response: { 201: { type: 'object', properties: { item: { type: 'string' } } } },
      },
      config: { triviumRoute: { name: 'orders.create', auth: 'public' } },
    },
    async () => ({}),
  )
  // Not ready(): no route guard is registered here (@trivium/auth would refuse nothing else).
  const document = buildOpenApi(
    fastify.trivium.registry,
    { title: 'Shop', version: '1.0.0' },
    { auth: false },
  )
  t.same(Object.keys(document.paths), ['/shops/{shop}/orders'])
  const operations = document.paths['/shops/{shop}/orders'] as unknown as Record<
    string,
    Record<string, unknown>
  >
  t.same(Object.keys(operations), ['post'])
  t.equal(operations.post?.operationId, 'orders.create')
  t.ok((operations.post?.responses as Record<string, unknown> | undefined)?.['201'], 'its 2xx status')
  t.match(JSON.stringify(operations.post), /"name":"shop","in":"path"/)
  t.ok(document.components.schemas?.OrdersCreateRequest, 'the request model')
  t.same(await problemsOf(document), [])
})
