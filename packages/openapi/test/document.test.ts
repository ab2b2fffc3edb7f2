import trivium, { jsonSchemaModel } from '@trivium/core'
import { HTTP_CODINGS } from '@trivium/core/internal'
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

// Issue 44 item 10: every operation takes the client's deadline, every body may be compressed.
const TIMEOUT = {
  name: 'Trivium-Timeout-Ms',
  in: 'header',
  required: false,
  description:
    "The call's deadline in milliseconds: when it passes the call stops and the answer is 504 (a stream ends with the error event). An invalid value is 400 `Invalid Trivium-Timeout-Ms header: must be a positive integer number of milliseconds, at most 2147483647`",
  schema: { type: 'string', pattern: '^[1-9][0-9]{0,9}$' },
}
const ENCODING = {
  name: 'Content-Encoding',
  in: 'header',
  required: false,
  description:
    'A compressed request body (one coding). Another coding, or several, is 415 `Unsupported Content-Encoding: <value> (accepted: …)`; bytes that are not valid data of the coding are 400; a body that inflates past the body limit is 413 (the limit applies to the inflated size)',
  schema: { type: 'string', enum: [...HTTP_CODINGS, 'x-gzip', 'identity'] },
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
    parameters: [TIMEOUT, ENCODING],
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
        '406:NotAcceptable',
        '413:PayloadTooLarge',
        '415:UnsupportedMediaType',
        '429:RateLimited',
        '500:InternalError',
        '503:ServiceUnavailable',
        '504:Timeout',
      ]),
    },
    security: [{ bearerAuth: [] }, { tokenQuery: [] }],
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
      TIMEOUT,
    ])
  },
)

t.test('GET: path parameter from the route, other fields as query parameters', async (t) => {
  const document = await documentOf()
  t.same(document.paths['/tasks/{id}']?.get?.parameters, [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
    TIMEOUT,
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
    TIMEOUT,
  ])
  t.same(document.paths['/tasks/{id}']?.delete?.parameters, [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
    TIMEOUT,
  ])
  t.equal(document.paths['/tasks/{id}']?.get?.requestBody, undefined)
  // a path parameter that is no field of the model is a string
  t.same(document.paths['/projects/{name}']?.get?.parameters, [
    { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
    TIMEOUT,
  ])
})

t.test('PUT with a path parameter: the JSON body is the model without it', async (t) => {
  const document = await documentOf()
  const op = document.paths['/tasks/{id}']?.put
  t.same(op?.parameters, [
    { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
    TIMEOUT,
    ENCODING,
  ])
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

t.test('security per auth mode: the bearer header only with tokenQuery: false', async (t) => {
  const document = await documentOf({ tokenQuery: false })
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

  // The default: @trivium/auth accepts `?token=` on every endpoint, so the document says so.
  const withQuery = await documentOf()
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
  t.same(op?.parameters, [TIMEOUT], 'Empty has no fields: only the deadline header')
  t.equal(op?.responses['504']?.$ref, '#/components/responses/Timeout')
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
  // GET: no body, so no 413/415; rateLimit: false → no 429; a response model with a binary form → no 406
  t.same(Object.keys(document.paths['/tasks/{id}']?.delete?.responses ?? {}), [
    '200',
    '400',
    '401',
    '404',
    '500',
    '503',
    '504',
  ])
  t.same(Object.keys(document.paths['/tasks/{id}']?.get?.responses ?? {}), [
    '200',
    '400',
    '401',
    '404',
    '406',
    '429',
    '500',
    '503',
    '504',
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
  t.same(op?.parameters, [
    { name: 'a', in: 'path', required: true, schema: { type: 'string' } },
    TIMEOUT,
    ENCODING,
  ])
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
    '406',
    '413',
    '415',
    '429',
    '500',
    '503',
    '504',
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
      '@trivium/openapi: endpoint "x": errorStatuses must list statuses among 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, 504',
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
    TIMEOUT,
    ENCODING,
  ])
  t.same(document.paths['/plain']?.post?.parameters, [TIMEOUT, ENCODING])
  // Issue 44 item 10: the same key with another body is 422, a key whose call still runs is 409.
  const keyed = document.paths['/keyed']?.post?.responses ?? {}
  t.same(keyed['409'], { $ref: '#/components/responses/Conflict' })
  t.same(keyed['422'], { $ref: '#/components/responses/UnprocessableContent' })
  t.notOk('422' in (document.paths['/plain']?.post?.responses ?? {}))
  t.match(document.components.responses.UnprocessableContent, {
    description:
      /^UnprocessableContentException \(TRV_UNPROCESSABLE_CONTENT\): the Idempotency-Key was already used/,
  })
})

t.test(
  'a client or bidirectional stream is documented with the 400 its HTTP/1.1 route answers',
  async (t) => {
    const fastify = Fastify()
    await fastify.register(trivium)
    fastify.trivium.clientStream(
      'tasks.import',
      { method: 'POST', url: '/tasks/import', request: CreateTask },
      async () => ({}),
    )
    fastify.trivium.bidiStream('tasks.sync', { method: 'POST', url: '/tasks/sync' }, async function* () {})
    await fastify.ready()
    const document = buildOpenApi(fastify.trivium.registry, INFO)
    t.same(await problemsOf(document), [])
    const op = document.paths['/tasks/import']?.post
    t.same(op?.responses, { '400': { $ref: '#/components/responses/BadRequest' } })
    t.equal(op?.['x-trivium-request-stream'], true)
    t.equal(op?.['x-trivium-streaming'], false)
    t.match(
      op?.description,
      /over HTTP\/1\.1 this route refuses every call with 400 `Endpoint tasks\.import takes a stream of requests: call it over WebSocket or TCP`\. Over HTTP\/2 \(a server started with HTTP\/2\) the request body is the stream of items in envelopes \(`Content-Type: application\/trivium-stream\+json` or `\+binary`/,
    )
    t.equal(document.paths['/tasks/sync']?.post?.['x-trivium-streaming'], true)
    t.match(document.paths['/tasks/sync']?.post?.description, /^Trivium bidirectional stream `tasks\.sync`/)
    // What the document says is what the route answers.
    const answer = await fastify.inject({ method: 'POST', url: '/tasks/import', payload: { title: 'x' } })
    t.equal(answer.statusCode, 400)
    t.equal(
      answer.json().message,
      'Endpoint tasks.import takes a stream of requests: call it over WebSocket or TCP',
    )
    await fastify.close()
  },
)
