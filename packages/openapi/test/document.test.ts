import trivium, { jsonSchemaModel } from '@trivium/core'
import { buildOpenApi, type OpenApiDocument, SchemaComponents } from '@trivium/openapi'
import Fastify from 'fastify'
import t from 'tap'
import { CreateTask, describeRulesOnly, problemsOf, refsOf, tasksApp, withBinary } from './helpers.js'

const INFO = { title: 'Tasks API', version: '1.2.3', description: 'Demo tasks.' }

async function documentOf(options: Parameters<typeof buildOpenApi>[2] = {}, create = CreateTask) {
  const fastify = await tasksApp(undefined, { create })
  await fastify.ready()
  const document = buildOpenApi(fastify.trivium.registry, INFO, options)
  await fastify.close()
  return document
}

const ERRORS = (names: string[]) =>
  Object.fromEntries(
    names.map((entry) => {
      const [status, name] = entry.split(':') as [string, string]
      return [status, { $ref: `#/components/responses/${name}` }]
    }),
  )

t.test('the document is valid OpenAPI 3.1 and every $ref resolves', async (t) => {
  const document = await documentOf({ servers: [{ url: 'https://api.example.com' }] })
  t.same(await problemsOf(document), [])
  t.equal(document.openapi, '3.1.0')
  t.same(document.servers, [{ url: 'https://api.example.com' }])
  t.equal(document.info.title, 'Tasks API')
  t.equal(document.info.version, '1.2.3')
  t.match(document.info.description, /^Demo tasks\.\n\n.*reachable over WebSocket and TCP by its name/s)
  t.same(
    document.tags.map((tag) => tag.name),
    ['health', 'projects', 'tasks'],
  )
  t.ok(refsOf(document).length > 20)
})

t.test('a POST create: operation, body in both formats when the model has a binary form', async (t) => {
  const document = await documentOf({}, withBinary(CreateTask))
  const op = document.paths['/tasks']?.post
  t.same(op, {
    operationId: 'tasks.create',
    summary: 'Create a task',
    description:
      'Trivium endpoint `tasks.create`: also reachable over WebSocket and TCP as a REQUEST frame to ' +
      '`tasks.create` with the same models (request `CreateTask`, response `Task`).',
    tags: ['tasks'],
    requestBody: {
      required: true,
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/CreateTask' } },
        'application/x-platform-binary': {
          schema: { type: 'string', format: 'binary', description: 'CreateTask in the binary format' },
        },
      },
    },
    responses: {
      '201': {
        description: 'Success',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Task' } } },
      },
      ...ERRORS([
        '400:BadRequest',
        '401:Unauthorized',
        '403:Forbidden',
        '404:NotFound',
        '413:PayloadTooLarge',
        '415:UnsupportedMediaType',
        '429:RateLimited',
        '500:InternalError',
        '503:ServiceUnavailable',
      ]),
    },
    security: [{ bearerAuth: [] }],
    'x-trivium-auth': 'required',
    'x-trivium-streaming': false,
    'x-trivium-permissions': ['tasks:write'],
    'x-trivium-rate-limit': { requests: 10, windowMs: 60000 },
  })
  t.same(document.components.schemas.CreateTask, {
    type: 'object',
    properties: { title: { type: 'string', minLength: 1 } },
    required: ['title'],
  })
})

t.test('binary is documented only for models that have it, and not at all with binary: false', async (t) => {
  const plain = await documentOf()
  t.same(Object.keys(plain.paths['/tasks']?.post?.requestBody?.content as object), ['application/json'])
  // emptyModel has a binary form
  t.same(Object.keys(plain.paths['/tasks/{id}']?.delete?.responses['200']?.content as object), [
    'application/json',
    'application/x-platform-binary',
  ])
  const off = await documentOf({ binary: false }, withBinary(CreateTask))
  t.same(Object.keys(off.paths['/tasks']?.post?.requestBody?.content as object), ['application/json'])
  t.same(Object.keys(off.paths['/tasks/{id}']?.delete?.responses['200']?.content as object), [
    'application/json',
  ])
})

t.test(
  'a nullable field is an optional query parameter without null (a query cannot carry null)',
  async (t) => {
    const Search = jsonSchemaModel<{ q?: string | null; page?: number | null }>('Search', {
      type: 'object',
      properties: { q: { type: ['string', 'null'] }, page: { type: ['integer', 'null'], minimum: 1 } },
    })
    const fastify = Fastify()
    await fastify.register(trivium)
    fastify.trivium.endpoint('search', { method: 'GET', url: '/search', request: Search }, async () => ({}))
    await fastify.ready()
    t.teardown(() => fastify.close())
    t.same(buildOpenApi(fastify.trivium.registry, INFO).paths['/search']?.get?.parameters, [
      { name: 'q', in: 'query', required: false, schema: { type: 'string' } },
      { name: 'page', in: 'query', required: false, schema: { type: 'integer', minimum: 1 } },
    ])
  },
)

t.test('GET: path parameter from the route, other fields as query parameters', async (t) => {
  const document = await documentOf()
  t.same(document.paths['/tasks/{id}']?.get?.parameters, [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
  ])
  // nested objects cannot travel in a query string (HTTP mapping): `filter` is left out
  t.same(document.paths['/tasks']?.get?.parameters, [
    { name: 'done', in: 'query', required: false, schema: { type: 'boolean' } },
    { name: 'limit', in: 'query', required: true, schema: { type: 'integer', minimum: 1 } },
    {
      name: 'tag',
      in: 'query',
      required: false,
      schema: { type: 'array', items: { type: 'string' } },
      style: 'form',
      explode: true,
    },
  ])
  t.same(document.paths['/tasks/{id}']?.delete?.parameters, [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
  ])
  t.equal(document.paths['/tasks/{id}']?.get?.requestBody, undefined)
  // a path parameter that is no field of the model is a string
  t.same(document.paths['/projects/{name}']?.get?.parameters, [
    { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
  ])
})

t.test('PUT with a path parameter: the JSON body is the model without it', async (t) => {
  const document = await documentOf()
  const op = document.paths['/tasks/{id}']?.put
  t.same(op?.parameters, [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }])
  t.same(op?.requestBody, {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          properties: { title: { type: 'string' }, done: { type: 'boolean' } },
          required: ['title'],
        },
      },
    },
  })
  t.same(op?.['x-trivium-roles'], ['admin'])
  t.equal(op?.responses['403']?.$ref, '#/components/responses/Forbidden')
})

t.test('security per auth mode: the bearer header only by default', async (t) => {
  const document = await documentOf()
  t.same(document.components.securitySchemes, {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: '`Authorization: Bearer <token>` (checked first)',
    },
  })
  const health = document.paths['/health']?.get
  t.same(health?.security, [])
  t.equal(health?.['x-trivium-auth'], 'public')
  t.notOk('401' in (health?.responses ?? {}), 'no 401 on a public endpoint')
  const list = document.paths['/tasks']?.get
  t.same(list?.security, [{}, { bearerAuth: [] }])
  t.equal(list?.responses['401']?.$ref, '#/components/responses/Unauthorized')
  const get = document.paths['/tasks/{id}']?.get
  t.same(get?.security, [{ bearerAuth: [] }])
  t.equal(get?.['x-trivium-auth'], 'required')

  const withQuery = await documentOf({ tokenQuery: true })
  t.same(withQuery.components.securitySchemes?.tokenQuery, {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The same token in the query parameter `token`, when there is no Authorization header',
  })
  t.same(withQuery.paths['/tasks']?.get?.security, [{}, { bearerAuth: [] }, { tokenQuery: [] }])
  t.same(withQuery.paths['/tasks/{id}']?.get?.security, [{ bearerAuth: [] }, { tokenQuery: [] }])

  const noAuth = await documentOf({ auth: false })
  t.equal(noAuth.components.securitySchemes, undefined)
  t.equal(noAuth.paths['/tasks/{id}']?.get?.security, undefined)
  t.notOk('401' in (noAuth.paths['/tasks/{id}']?.get?.responses ?? {}))
  t.notOk('Unauthorized' in noAuth.components.responses)
  t.same(await problemsOf(noAuth), [])
})

t.test('a streaming endpoint answers text/event-stream and describes the events', async (t) => {
  const document = await documentOf()
  const op = document.paths['/tasks/watch']?.get
  t.equal(op?.['x-trivium-streaming'], true)
  t.same(op?.responses['200'], {
    description: 'A stream of response items (Server-Sent Events)',
    content: {
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Server-Sent Events. Each item is an event `item` whose data is the item as JSON (schema ' +
            '`x-trivium-item-schema`) and whose `id` counts from 0; a normal end is an event `end` with ' +
            'data `{}`; a failure is an event `error` whose data is the error body (`ErrorBody`).',
        },
        'x-trivium-item-schema': { $ref: '#/components/schemas/Task' },
      },
    },
  })
  t.match(op?.description, /STREAM_ITEM frames then STREAM_END/)
  t.same(op?.parameters, undefined, 'Empty has no fields')
})

t.test('error responses share one ErrorBody; 429 carries Retry-After', async (t) => {
  const document = await documentOf()
  t.same(document.components.schemas.ErrorBody?.required, [
    'statusCode',
    'code',
    'error',
    'message',
    'requestId',
  ])
  t.same(Object.keys(document.components.schemas.ErrorBody?.properties as object), [
    'statusCode',
    'code',
    'error',
    'message',
    'requestId',
    'retryAfter',
    'details',
  ])
  t.same(document.components.responses.RateLimited, {
    description:
      'RateLimitExceededException (TRV_RATE_LIMITED): over the limit; retry after `retryAfter` seconds',
    headers: {
      'Retry-After': {
        description: 'Seconds until the window ends (equals `retryAfter` in the body)',
        schema: { type: 'integer', minimum: 0 },
      },
    },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
  })
  for (const response of Object.values(document.components.responses)) {
    t.same(response.content, { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } })
  }
  // GET: no body, so no 413/415; rateLimit: false → no 429
  t.same(Object.keys(document.paths['/tasks/{id}']?.delete?.responses ?? {}), [
    '200',
    '400',
    '401',
    '404',
    '500',
    '503',
  ])
  t.same(Object.keys(document.paths['/tasks/{id}']?.get?.responses ?? {}), [
    '200',
    '400',
    '401',
    '404',
    '429',
    '500',
    '503',
  ])
  t.equal(document.paths['/tasks/{id}']?.delete?.['x-trivium-rate-limit'], false)
})

t.test('definitions of a self-contained model become components and their refs follow', async (t) => {
  const document = await documentOf()
  const schemas = document.components.schemas
  t.same(schemas.Project, {
    title: 'Project',
    type: 'object',
    properties: {
      name: { type: 'string' },
      owner: { $ref: '#/components/schemas/User' },
      tasks: { type: 'array', items: { $ref: '#/components/schemas/Task' } },
      parent: { anyOf: [{ $ref: '#/components/schemas/Project' }, { type: 'null' }] },
    },
    required: ['name', 'owner', 'tasks'],
  })
  t.same(schemas.User?.properties, {
    id: { type: 'integer' },
    manager: { $ref: '#/components/schemas/User' },
  })
  // `Task` in Project's definitions equals the Task model (up to its title): stored once
  t.notOk('Task_2' in schemas)
  t.same(await problemsOf(document), [])
})

t.test('components: dedupe, clashing names, models without a schema', async (t) => {
  const components = new SchemaComponents()
  const a = jsonSchemaModel('Item', { type: 'object', properties: { a: { type: 'string' } } })
  const same = jsonSchemaModel('Item', { properties: { a: { type: 'string' } }, type: 'object' })
  const other = jsonSchemaModel('Item', { type: 'object', properties: { b: { type: 'string' } } })
  t.same(components.add(a).ref, { $ref: '#/components/schemas/Item' })
  t.same(components.add(same).ref, { $ref: '#/components/schemas/Item' })
  t.same(components.add(other).ref, { $ref: '#/components/schemas/Item_2' })
  const bare = { name: 'Raw thing', fromJSON: (x: unknown) => x, toJSON: (x: unknown) => x }
  t.same(components.add(bare).ref, { $ref: '#/components/schemas/Raw_thing' })
  t.same(components.schemas.Raw_thing, {})

  // a definition clashing with an existing component is renamed, and the refs to it follow
  const withDefs = jsonSchemaModel('Box', {
    type: 'object',
    properties: { item: { $ref: '#/definitions/Item' }, items: { $ref: '#/$defs/List/items' } },
    definitions: { Item: { type: 'integer' } },
    $defs: { List: { type: 'array', items: { type: 'string' } } },
  })
  components.add(withDefs)
  t.same(components.schemas.Box, {
    type: 'object',
    properties: {
      item: { $ref: '#/components/schemas/Item_3' },
      items: { $ref: '#/components/schemas/List/items' },
    },
  })
  t.same(components.schemas.Item_3, { type: 'integer' })
  t.same(components.schemas.List, { type: 'array', items: { type: 'string' } })

  // enum/const/default values are data: a `$ref` key inside them is not rewritten
  components.add(
    jsonSchemaModel('Data', {
      type: 'object',
      default: { $ref: '#/definitions/X' },
      properties: { self: { $ref: '#/properties/other' }, other: { type: 'string' } },
    }),
  )
  t.same(components.schemas.Data?.default, { $ref: '#/definitions/X' })
  t.same((components.schemas.Data?.properties as any)?.self, {
    $ref: '#/components/schemas/Data/properties/other',
  })
})

t.test('endpoints without models and a plain list of definitions', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.endpoint('misc.echo', { method: 'POST', url: '/echo/:a' }, (x) => x)
  await fastify.ready()
  const document: OpenApiDocument = buildOpenApi(fastify.trivium.registry.list(), {
    title: 'x',
    version: '0',
  })
  const op = document.paths['/echo/{a}']?.post
  t.same(op?.parameters, [{ name: 'a', in: 'path', required: true, schema: { type: 'string' } }])
  t.same(op?.requestBody, { required: false, content: { 'application/json': { schema: {} } } })
  t.same(op?.responses['200'], { description: 'Success', content: { 'application/json': { schema: {} } } })
  t.same(Object.keys(document.components.schemas), ['ErrorBody'])
  t.same(await problemsOf(document), [])
  await fastify.close()
})

t.test('errorStatuses adds the statuses only the handler knows; anything unknown is refused', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  const Login = jsonSchemaModel('Login', { type: 'object', properties: { user: { type: 'string' } } })
  app.trivium.endpoint(
    'auth.login',
    { method: 'POST', url: '/login', request: Login, response: Login, errorStatuses: [401] },
    () => ({}),
  )
  app.trivium.endpoint(
    'roles.create',
    { method: 'POST', url: '/roles', request: Login, response: Login, errorStatuses: [409] },
    () => ({}),
  )
  await app.ready()
  const document = buildOpenApi(app.trivium.registry, INFO, { auth: true })
  t.same(Object.keys(document.paths['/login']?.post?.responses ?? {}), [
    '200',
    '400',
    '401',
    '404',
    '413',
    '415',
    '429',
    '500',
    '503',
  ])
  const conflict = document.paths['/roles']?.post?.responses?.['409'] as { $ref: string }
  t.same(conflict, { $ref: '#/components/responses/Conflict' })
  t.match(document.components.responses.Conflict, { description: /^ConflictException \(TRV_CONFLICT\)/ })
  const bad = Fastify()
  await bad.register(trivium)
  bad.trivium.endpoint('x', { method: 'GET', url: '/x', errorStatuses: [418] } as never, () => ({}))
  await bad.ready()
  t.throws(() => buildOpenApi(bad.trivium.registry, INFO), {
    message:
      '@trivium/openapi: endpoint "x": errorStatuses must list statuses among 400, 401, 403, 404, 409, 413, 415, 429, 500, 503',
  })
  await app.close()
  await bad.close()
})

t.test('an endpoint that takes an idempotency key documents the Idempotency-Key header', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  describeRulesOnly(fastify)
  const opts = { method: 'POST', status: 201, request: CreateTask } as const
  fastify.trivium.endpoint('keyed.create', { ...opts, url: '/keyed', idempotencyKey: true }, () => ({}))
  fastify.trivium.endpoint('plain.create', { ...opts, url: '/plain' }, () => ({}))
  await fastify.ready()
  const document = buildOpenApi(fastify.trivium.registry, INFO)
  await fastify.close()
  t.same(await problemsOf(document), [])
  t.same(document.paths['/keyed']?.post?.parameters, [
    {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'A unique key (e.g. a UUID), sent again with every retry of this call: a retry with the same key and body gets the first answer instead of running again (409 while the first still runs, 422 with another body)',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
    },
  ])
  t.equal(document.paths['/plain']?.post?.parameters, undefined)
})
