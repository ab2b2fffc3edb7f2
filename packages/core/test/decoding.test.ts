// Issue 16 items 1–3: the decoding rules of PROTOCOL.md "Decoding rules", one place for every transport.
import trivium, {
  emptyModel,
  jsonSchemaModel,
  type Model,
  triviumFactoryOptions,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

const Logout = jsonSchemaModel<{ allDevices?: boolean }>('LogoutRequest', {
  type: 'object',
  properties: { allDevices: { type: 'boolean' } },
})
const Create = jsonSchemaModel<{ title: string }>('CreateTask', {
  type: 'object',
  properties: { title: { type: 'string' } },
  required: ['title'],
})

// A binary format like @trivium/codec's: a message starts with the version byte 01, so zero bytes
// would be "truncated" if the format were asked to read them.
const binary: WireFormat = {
  name: 'binary',
  contentType: 'application/x-platform-binary',
  decode(model, bytes) {
    if (bytes.length === 0) throw new ValidationException('Malformed binary payload: truncated')
    return (model as Model).decode!(bytes)
  },
  encode: () => new Uint8Array([1]),
}
const withBinary = <T>(m: Model<T>): Model<T> => ({
  ...m,
  decode: () => ({ fromBinary: true }) as T,
  encode: () => new Uint8Array([1]),
})

/** The answers of the zero-bytes endpoints, with a binary form so that a binary call is answered. */
const Got = withBinary(jsonSchemaModel('Got', { type: 'object' }))

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.addFormat(binary)
  const stored: unknown[] = []
  fastify.trivium.endpoint(
    'auth.logout',
    { method: 'POST', url: '/auth/logout', request: withBinary(Logout), response: Got },
    (req) => ({ got: req }),
  )
  fastify.trivium.endpoint(
    'health',
    { method: 'POST', url: '/health', request: emptyModel, response: Got },
    (req) => ({
      got: req,
    }),
  )
  fastify.trivium.endpoint('tasks.create', { method: 'POST', url: '/tasks', request: Create }, (req) => {
    stored.push(req)
    return req
  })
  fastify.trivium.endpoint('tasks.update', { method: 'PUT', url: '/tasks/:id' }, (req) => {
    stored.push(req)
    return req
  })
  return { fastify, stored }
}

t.test('HTTP: no body, or Content-Length: 0 with any Content-Type, is the empty model', async (t) => {
  const { fastify } = await app()
  for (const headers of [
    {},
    { 'content-length': '0' },
    { 'content-type': 'application/json', 'content-length': '0' },
    { 'content-type': 'application/x-platform-binary', 'content-length': '0' },
  ]) {
    for (const url of ['/auth/logout', '/health']) {
      const res = await fastify.inject({ method: 'POST', url, headers })
      t.equal(res.statusCode, 200, `${url} ${JSON.stringify(headers)}: ${res.body}`)
      t.same(res.json(), { got: {} })
    }
  }
  const required = await fastify.inject({ method: 'POST', url: '/tasks' })
  t.equal(required.statusCode, 400)
  t.equal(required.json().message, 'Invalid CreateTask: title is required')
})

t.test('frames: zero payload bytes are the empty model in JSON and in binary', async (t) => {
  const { fastify } = await app()
  await fastify.ready()
  const base = { protocol: 'tcp' as const, requestId: 'c:1', log: fastify.log, payload: new Uint8Array() }
  for (const format of [jsonFormat, binary]) {
    for (const endpoint of ['auth.logout', 'health']) {
      const { result } = await fastify.trivium.invoke({ ...base, format, endpoint })
      t.same(result, { got: {} }, `${endpoint} ${format.name}`)
    }
  }
  // tasks.create's response model has no binary form: a binary call is 406 (PROTOCOL.md "HTTP").
  await t.rejects(fastify.trivium.invoke({ ...base, format: binary, endpoint: 'tasks.create' }), {
    statusCode: 406,
    code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
    message: 'Endpoint tasks.create has no binary response format',
  })
  await t.rejects(fastify.trivium.invoke({ ...base, format: jsonFormat, endpoint: 'tasks.create' }), {
    code: 'TRV_VALIDATION',
    message: 'Invalid CreateTask: title is required',
  })
})

t.test('HTTP: invalid UTF-8 inside a JSON body is refused before the handler runs', async (t) => {
  const { fastify, stored } = await app()
  for (const payload of [
    Buffer.from([...Buffer.from('{"title":"'), 0xff, 0xfe, ...Buffer.from('"}')]),
    Buffer.from([...Buffer.from('{"title":"ab'), 0xe2, 0x82]), // truncated sequence at the end
  ]) {
    const res = await fastify.inject({
      method: 'POST',
      url: '/tasks',
      payload,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    t.equal(res.statusCode, 400)
    t.same(
      [res.json().code, res.json().error, res.json().message],
      ['TRV_VALIDATION', 'ValidationException', 'Request body is not valid UTF-8'],
    )
    t.match(res.json().requestId, /^req-/)
  }
  t.same(stored, [], 'nothing reached the handler')
  const ok = await fastify.inject({ method: 'POST', url: '/tasks', payload: { title: 'é€😀' } })
  t.same(ok.json(), { title: 'é€😀' }, 'valid multi-byte text still passes')
})

t.test('__proto__ and constructor.prototype keys: one rule on HTTP and frames', async (t) => {
  const { fastify, stored } = await app()
  await fastify.ready()
  const bodies = [
    '{"title":"x","__proto__":{"isAdmin":true}}',
    '{"title":"x","nested":{"__proto__":{"isAdmin":true}}}',
    '{"title":"x","\\u005f_proto__":{"isAdmin":true}}',
    '{"title":"x","constructor":{"prototype":{"isAdmin":true}}}',
  ]
  for (const body of bodies) {
    const http = await fastify.inject({
      method: 'POST',
      url: '/tasks',
      payload: body,
      headers: { 'content-type': 'application/json' },
    })
    t.equal(http.statusCode, 400, `HTTP ${body}`)
    t.same([http.json().code, http.json().message], ['TRV_VALIDATION', 'Request body is not valid JSON'])
    await t.rejects(
      fastify.trivium.invoke({
        protocol: 'websocket',
        format: jsonFormat,
        requestId: 'c:1',
        log: fastify.log,
        endpoint: 'tasks.create',
        payload: Buffer.from(body),
      }),
      { code: 'TRV_VALIDATION', message: 'Request body is not valid JSON' },
      `frame ${body}`,
    )
  }
  t.same(stored, [])
  const fine = await fastify.trivium.invoke({
    protocol: 'websocket',
    format: jsonFormat,
    requestId: 'c:2',
    log: fastify.log,
    endpoint: 'tasks.create',
    payload: Buffer.from('{"title":"prototype of constructor","constructor":"a string is fine"}'),
  })
  t.same(fine.result, { title: 'prototype of constructor', constructor: 'a string is fine' })
})

t.test(
  'a lone surrogate in any JSON string or key is refused, naming the field, on HTTP and frames',
  async (t) => {
    const { fastify, stored } = await app()
    await fastify.ready()
    const LONE = 'must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair)'
    const cases: [url: string, endpoint: string, body: string, model: string, field: string][] = [
      ['/tasks', 'tasks.create', '{"title":"a\\ud800b"}', 'CreateTask', 'title'],
      ['/tasks', 'tasks.create', '{"title":"\\udc00"}', 'CreateTask', 'title'],
      ['/tasks', 'tasks.create', '{"title":"x\\ud83d"}', 'CreateTask', 'title'],
      ['/tasks/1', 'tasks.update', '{"tags":["ok","\\ude00"]}', 'any', 'tags[1]'],
      ['/tasks/1', 'tasks.update', '{"meta":{"\\ud800":1}}', 'any', 'meta.\\ud800'],
      ['/tasks/1', 'tasks.update', '"\\ud800"', 'any', '(body)'],
    ]
    for (const [url, endpoint, body, model, field] of cases) {
      const expected = { message: `Invalid ${model}: ${field} ${LONE}`, details: [{ field, message: LONE }] }
      const http = await fastify.inject({
        method: url === '/tasks' ? 'POST' : 'PUT',
        url,
        payload: body,
        headers: { 'content-type': 'application/json' },
      })
      t.equal(http.statusCode, 400, `HTTP ${body}`)
      t.same(
        [http.json().code, http.json().message, http.json().details],
        ['TRV_VALIDATION', expected.message, expected.details],
      )
      const frame = await fastify.trivium
        .invoke({
          protocol: 'websocket',
          format: jsonFormat,
          requestId: 'c:1',
          log: fastify.log,
          endpoint,
          payload: Buffer.from(body),
        })
        .then(
          () => undefined,
          (err: ValidationException) => ({ message: err.message, details: err.details }),
        )
      t.same(frame, expected, `frame ${body}`)
    }
    t.same(stored, [], 'nothing reached a handler')
    // A pair is one character beyond U+FFFF, in an escape or as UTF-8.
    const pair = await fastify.inject({
      method: 'POST',
      url: '/tasks',
      payload: '{"title":"\\ud83d\\ude00😀"}',
      headers: { 'content-type': 'application/json' },
    })
    t.same([pair.statusCode, pair.json()], [200, { title: '😀😀' }])
    // A surrogate's percent-encoded bytes are never decoded into one: the path refuses them, the query
    // keeps the text as sent.
    const Find = jsonSchemaModel('Find', { type: 'object', properties: { q: { type: 'string' } } })
    const found = Fastify(triviumFactoryOptions())
    await found.register(trivium)
    found.trivium.endpoint('find', { method: 'GET', url: '/find/:q', request: Find }, (req) => req)
    found.trivium.endpoint('search', { method: 'GET', url: '/search', request: Find }, (req) => req)
    const path = await found.inject('/find/%ED%A0%80')
    t.same([path.statusCode, path.json().message], [400, 'The URL is not valid (bad percent-encoding)'])
    const query = await found.inject('/search?q=%ED%A0%80')
    t.same([query.statusCode, query.json()], [200, { q: '%ED%A0%80' }])
    await found.close()
  },
)

t.test('a scalar query parameter given twice is a 400 naming it; lists stay lists', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  const List = jsonSchemaModel('ListTasks', {
    type: 'object',
    properties: { limit: { type: 'integer' }, tag: { type: 'array', items: { type: 'string' } } },
  })
  fastify.trivium.endpoint('tasks.list', { method: 'GET', url: '/tasks', request: List }, (req) => req)
  const twice = await fastify.inject('/tasks?limit=1&limit=50')
  t.equal(twice.statusCode, 400)
  t.same(
    [twice.json().code, twice.json().message, twice.json().details],
    [
      'TRV_VALIDATION',
      'Query parameter limit must be given once',
      [{ field: 'limit', message: 'must be given once' }],
    ],
  )
  const list = await fastify.inject('/tasks?tag=a&tag=b&limit=5')
  t.same(list.json(), { tag: ['a', 'b'], limit: 5 })
})

t.test('an app that weakened Fastify JSON poisoning options is told the rule at registration', async (t) => {
  for (const [key, value] of [
    ['onProtoPoisoning', 'remove'],
    ['onConstructorPoisoning', 'ignore'],
  ] as const) {
    const fastify = Fastify({ [key]: value })
    await t.rejects(
      async () => {
        await fastify.register(trivium)
      },
      {
        code: 'TRV_CORE_JSON_POISONING',
        message: `@trivium/core: Fastify's ${key} must be 'error' (got '${value}'): JSON with __proto__ or constructor.prototype keys is refused on every transport (PROTOCOL.md "Decoding rules")`,
      },
    )
  }
})
