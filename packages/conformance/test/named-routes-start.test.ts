// Issue 41 item 1: naming a route changes nothing of its HTTP behaviour (the same answers, byte for byte,
// with and without the name), and a name a frame cannot serve is refused at start with one line.
import triviumAuth from '@trivium/auth'
import { orderBody } from '@trivium/conformance'
import triviumCore from '@trivium/core'
import Fastify, { type FastifyInstance, type FastifySchema, type RouteShorthandOptions } from 'fastify'
import t, { type Test } from 'tap'

const SECRET = 'named-start-secret-named-start-secret-01234'

async function base(): Promise<FastifyInstance> {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumAuth, { secret: SECRET, issuer: 'named-start' })
  return app
}

/** Typed as Fastify's schema (not inferred): the route's hook answers 403 besides the 201 it declares. */
const orderSchema: FastifySchema = {
  params: { type: 'object', properties: { shop: { type: 'string', maxLength: 8 } } },
  body: orderBody,
  response: { 201: { type: 'object', properties: { shop: { type: 'string' }, item: { type: 'string' } } } },
}

/** The route of the HTTP diff: params, body, a 201 response schema and an own hook. */
async function service(name: string | undefined): Promise<{ app: FastifyInstance; url: string }> {
  const app = await base()
  app.post(
    '/shops/:shop/orders',
    {
      schema: orderSchema,
      config: { triviumRoute: { auth: 'public', ...(name === undefined ? {} : { name }) } },
      onRequest: async (request, reply) => {
        if (request.headers['x-deny'] !== undefined) reply.code(403).send({ denied: true })
      },
    },
    async (request, reply) => {
      reply.code(201).header('x-own', 'yes')
      return {
        ...(request.body as object),
        shop: (request.params as { shop: string }).shop,
        secret: 'dropped',
      }
    },
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` }
}

const requests: [string, RequestInit][] = [
  ['/shops/corner/orders', { method: 'POST', body: '{"item":"tea","quantity":2}' }],
  ['/shops/corner/orders', { method: 'POST', body: '{"item":"","quantity":0}' }],
  ['/shops/corner/orders', { method: 'POST', body: '{"item":"tea"' }],
  ['/shops/corner/orders', { method: 'POST', body: 'item=tea', headers: { 'content-type': 'text/plain' } }],
  ['/shops/much-too-long/orders', { method: 'POST', body: '{"item":"tea","quantity":2}' }],
  [
    '/shops/corner/orders',
    { method: 'POST', body: '{"item":"tea","quantity":2}', headers: { 'x-deny': '1' } },
  ],
  ['/shops/corner/orders', { method: 'GET' }],
]

async function answers(url: string): Promise<unknown[]> {
  const out: unknown[] = []
  for (const [path, init] of requests) {
    const headers = { 'content-type': 'application/json', ...(init.headers as Record<string, string>) }
    const res = await fetch(url + path, { ...init, headers })
    const kept: [string, string][] = []
    res.headers.forEach((value, name) => {
      if (name !== 'date') kept.push([name, value])
    })
    // The request id differs run to run; everything else must not.
    out.push({
      status: res.status,
      headers: kept,
      body: (await res.text()).replace(/"requestId":"[^"]*"/, ''),
    })
  }
  return out
}

t.test("the route's HTTP answers are the same with and without the name", async (t) => {
  const plain = await service(undefined)
  t.teardown(() => plain.app.close())
  const named = await service('orders.create')
  t.teardown(() => named.app.close())
  const before = await answers(plain.url)
  t.same(await answers(named.url), before)
  t.equal((before[0] as { status: number }).status, 201, 'the diff covers a success')
  t.equal((before[1] as { status: number }).status, 400, 'and a schema refusal')
})

async function refusal(t: Test, add: (app: FastifyInstance) => void, message: string): Promise<void> {
  const app = await base()
  t.teardown(() => app.close())
  let error: unknown
  try {
    add(app)
    await app.ready()
  } catch (err) {
    error = err
  }
  t.equal((error as Error | undefined)?.message, message)
  if (message.includes('config.triviumRoute.name'))
    t.match(error, { name: 'NamedRouteError', code: 'TRV_NAMED_ROUTE' })
}

const named = (name: string, rest: Partial<RouteShorthandOptions> = {}): RouteShorthandOptions => ({
  ...rest,
  config: { triviumRoute: { name, auth: 'public' } },
})
const ok = async () => ({})

t.test('a name a frame cannot serve is refused at start, with the fix', async (t) => {
  await refusal(
    t,
    (app) => {
      app.trivium.endpoint('orders.create', { method: 'POST', url: '/orders' }, ok)
      app.post('/v2/orders', named('orders.create'), ok)
    },
    '@trivium/core: endpoint "orders.create" is already registered',
  )
  await refusal(
    t,
    (app) => app.get('/files/*', named('files.get'), ok),
    '@trivium/core: route GET /files/* (config.triviumRoute.name "files.get"): a wildcard path (*) has no field a frame payload can fill: use named path parameters (/:id), or leave the route unnamed',
  )
  await refusal(
    t,
    (app) => app.patch('/orders/:id', named('orders.patch'), ok),
    '@trivium/core: route PATCH /orders/:id (config.triviumRoute.name "orders.patch"): a named route\'s method must be one of GET, POST, PUT, DELETE (the HTTP mapping\'s methods): give it one of those, or leave the route unnamed',
  )
  await refusal(
    t,
    (app) => app.post('/orders', named('orders.create', { schema: { querystring: { type: 'object' } } }), ok),
    '@trivium/core: route POST /orders (config.triviumRoute.name "orders.create"): a POST or PUT route\'s query fields cannot be told from its body fields in a frame payload (HTTP mapping: every field not in the path is the body): move them into the body schema, or leave the route unnamed',
  )
  await refusal(
    t,
    (app) =>
      app.post(
        '/upload',
        named('files.upload', { schema: { consumes: ['multipart/form-data'] } as Record<string, unknown> }),
        ok,
      ),
    '@trivium/core: route POST /upload (config.triviumRoute.name "files.upload"): it consumes multipart/form-data: frames carry JSON (multipart and other bodies cannot be mapped); leave the route unnamed',
  )
  await refusal(
    t,
    (app) => app.get('/legacy', named('GET /legacy'), ok),
    '@trivium/core: invalid endpoint name "GET /legacy": use dot-separated segments of letters, digits, "_" and "-", each starting with a letter',
  )
})

t.test('a GET route and the HEAD route Fastify adds for it are one endpoint', async (t) => {
  const app = await base()
  t.teardown(() => app.close())
  app.get('/orders', named('orders.list'), ok)
  await app.ready()
  t.same(
    app.trivium.registry.list().map((d) => [d.name, d.method, d.url]),
    [['orders.list', 'GET', '/orders']],
  )
})

const item = { type: 'object', properties: { n: { type: 'integer' } } }
const answering = (name: string, response: unknown): RouteShorthandOptions => ({
  schema: { response } as FastifySchema,
  config: { triviumRoute: { name, auth: 'public' } },
})

t.test('a response a frame cannot carry, or a stream it cannot map, is refused at start', async (t) => {
  const file = { 200: { content: { 'application/octet-stream': { schema: { type: 'string' } } } } }
  await refusal(
    t,
    (app) => app.get('/file', answering('files.get', file), ok),
    "@trivium/core: route GET /file (config.triviumRoute.name \"files.get\"): it answers application/octet-stream: frames carry a JSON body or a stream of JSON items (text, files and binary bodies cannot be mapped); declare content['application/json'] or content['application/x-ndjson'] with a schema, or leave the route unnamed",
  )
  const noItem = { 200: { content: { 'application/x-ndjson': {} } } }
  await refusal(
    t,
    (app) => app.get('/feed', answering('feed.list', noItem), ok),
    '@trivium/core: route GET /feed (config.triviumRoute.name "feed.list"): its application/x-ndjson response has no item schema: declare content[\'application/x-ndjson\'].schema (the schema of one item) so that frames carry its items as a stream, or leave the route unnamed',
  )
  const both = {
    200: { content: { 'application/json': { schema: item }, 'text/event-stream': { schema: item } } },
  }
  await refusal(
    t,
    (app) => app.get('/feed', answering('feed.list', both), ok),
    '@trivium/core: route GET /feed (config.triviumRoute.name "feed.list"): its 200 response declares application/json and text/event-stream: a frame call has one answer form (a JSON body, or a stream of JSON items); declare one of them, or leave the route unnamed',
  )
  const ndjson = { 200: { content: { 'application/x-ndjson': { schema: item } } } }
  await refusal(
    t,
    (app) => app.put('/feed', answering('feed.put', ndjson), ok),
    '@trivium/core: route PUT /feed (config.triviumRoute.name "feed.put"): a streaming route (application/x-ndjson) is called with GET or POST, as a stream endpoint is: change its method, or leave the route unnamed',
  )
})
