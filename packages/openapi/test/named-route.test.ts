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

t.test('a streaming named route is documented in its own stream type, with its item schema', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  t.teardown(() => fastify.close())
  const item = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
  fastify.get(
    '/ticks',
    {
      schema: { response: { 200: { content: { 'application/x-ndjson': { schema: item } } } } },
      config: { triviumRoute: { name: 'ticks.list', auth: 'public' } },
    },
    async () => '',
  )
  const document = buildOpenApi(
    fastify.trivium.registry,
    { title: 'Ticks', version: '1.0.0' },
    { auth: false },
  )
  const get = (document.paths['/ticks'] as unknown as Record<string, Record<string, any>>).get
  t.same(Object.keys(get?.responses['200'].content), ['application/x-ndjson'])
  t.equal(
    get?.responses['200'].content['application/x-ndjson']['x-trivium-item-schema'].$ref,
    '#/components/schemas/TicksListResponse',
  )
  t.match(get?.description, /over HTTP the route answers `application\/x-ndjson`/)
  t.notMatch(JSON.stringify(get), /text\/event-stream/)
  t.same(await problemsOf(document), [])
})
