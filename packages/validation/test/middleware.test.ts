import trivium, { ValidationException } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import triviumValidation, { validationMiddleware } from '@trivium/validation'
import Fastify from 'fastify'
import t from 'tap'

async function app(options: { plugin?: boolean } = {}) {
  const fastify = Fastify()
  await fastify.register(trivium)
  if (options.plugin !== false) await fastify.register(triviumValidation)
  let calls = 0
  fastify.trivium.endpoint(
    'users.register',
    {
      method: 'POST',
      url: '/users',
      status: 201,
      validate: {
        email: 'email',
        username: 'username',
        password: { rule: 'password', minLength: 10 },
        nickname: { rule: 'username', optional: true },
      },
      sanitize: ['bio'],
    },
    (req: { username: string; bio?: string }) => {
      calls++
      return { created: req.username, bio: req.bio ?? null, calls }
    },
  )
  fastify.trivium.endpoint(
    'files.upload',
    {
      method: 'POST',
      url: '/files',
      validate: { filename: 'fileExtension', size: 'fileSize', content: 'fileContent' },
    },
    () => ({ ok: true }),
  )
  fastify.trivium.endpoint('plain', { method: 'POST', url: '/plain' }, (req) => req)
  return { fastify, handlerCalls: () => calls }
}

const good = { email: 'ada@example.com', username: 'ada_l', password: 'Analytical1!', bio: ' <b>hi</b> ' }

t.test('HTTP: a valid body reaches the handler; sanitize fields are cleaned', async (t) => {
  const { fastify } = await app()
  const res = await fastify.inject({ method: 'POST', url: '/users', payload: good })
  t.equal(res.statusCode, 201)
  t.same(res.json(), { created: 'ada_l', bio: '&lt;b&gt;hi&lt;/b&gt;', calls: 1 })
})

t.test(
  'HTTP: a bad field is a 400 ValidationException naming the field; the handler never runs',
  async (t) => {
    const { fastify, handlerCalls } = await app()
    const res = await fastify.inject({ method: 'POST', url: '/users', payload: { ...good, email: 'nope' } })
    t.equal(res.statusCode, 400)
    t.match(res.json(), {
      statusCode: 400,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'Invalid email format',
      details: [{ field: 'email', message: 'Invalid email format' }],
    })
    t.notMatch(res.body, /at .*\.js/, 'no stack trace')
    t.equal(handlerCalls(), 0)
  },
)

t.test('every failing field is listed; the message is the first failure', async (t) => {
  const { fastify } = await app()
  const res = await fastify.inject({
    method: 'POST',
    url: '/users',
    payload: { email: 'x', username: 'a', password: 'Short1!', nickname: 'bad name' },
  })
  t.equal(res.statusCode, 400)
  t.same(res.json().details, [
    { field: 'email', message: 'Invalid email format' },
    {
      field: 'username',
      message: 'Username must be 3-20 characters and contain only letters, numbers, and underscores',
    },
    { field: 'password', message: 'Password must be at least 10 characters' },
    {
      field: 'nickname',
      message: 'Username must be 3-20 characters and contain only letters, numbers, and underscores',
    },
  ])
  t.equal(res.json().message, 'Invalid email format')
})

t.test('missing required fields, wrong types and non-object bodies', async (t) => {
  const { fastify } = await app()
  let res = await fastify.inject({ method: 'POST', url: '/users', payload: { username: 'ada_l' } })
  t.equal(res.statusCode, 400)
  t.same(res.json().details, [
    { field: 'email', message: 'Field is required' },
    { field: 'password', message: 'Field is required' },
  ])
  res = await fastify.inject({
    method: 'POST',
    url: '/users',
    payload: { ...good, email: 42, username: ['x'] },
  })
  t.same(
    res.json().details.map((d: { field: string }) => d.field),
    ['email', 'username'],
  )
  res = await fastify.inject({
    method: 'POST',
    url: '/users',
    headers: { 'content-type': 'application/json' },
    payload: '[1,2]',
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().message, 'Field is required')
  res = await fastify.inject({ method: 'POST', url: '/users', payload: { ...good, nickname: null } })
  t.equal(res.statusCode, 201, 'optional field may be null')
  // Inherited properties are not fields.
  res = await fastify.inject({
    method: 'POST',
    url: '/users',
    headers: { 'content-type': 'application/json' },
    payload: '{"__proto__":{"email":"ada@example.com"},"username":"ada_l","password":"Analytical1!"}',
  })
  t.equal(res.statusCode, 400)
})

t.test('file fields', async (t) => {
  const { fastify } = await app()
  let res = await fastify.inject({
    method: 'POST',
    url: '/files',
    payload: { filename: 'a.PDF', size: 1024, content: '%PDF-1.7' },
  })
  t.equal(res.statusCode, 200)
  res = await fastify.inject({
    method: 'POST',
    url: '/files',
    payload: { filename: 'a.exe', size: 11 * 1024 * 1024, content: '<script>x</script>' },
  })
  t.same(res.json().details, [
    { field: 'filename', message: 'File type not allowed' },
    { field: 'size', message: 'File size exceeds limit' },
    { field: 'content', message: 'File contains potentially malicious content' },
  ])
})

t.test('WebSocket and TCP (frame transports via trivium.invoke) run the same check', async (t) => {
  const { fastify, handlerCalls } = await app()
  await fastify.ready()
  for (const protocol of ['websocket', 'tcp'] as const) {
    const bad = fastify.trivium.invoke({
      endpoint: 'users.register',
      protocol,
      payload: Buffer.from(JSON.stringify({ ...good, username: 'x!' })),
      format: jsonFormat,
      requestId: `c1:${protocol}`,
      log: fastify.log,
    })
    await t.rejects(bad, {
      code: 'TRV_VALIDATION',
      message: 'Username must be 3-20 characters and contain only letters, numbers, and underscores',
      details: [
        {
          field: 'username',
          message: 'Username must be 3-20 characters and contain only letters, numbers, and underscores',
        },
      ],
    })
    const ok = await fastify.trivium.invoke({
      endpoint: 'users.register',
      protocol,
      payload: Buffer.from(JSON.stringify(good)),
      format: jsonFormat,
      requestId: `c1:${protocol}:2`,
      log: fastify.log,
    })
    t.match(ok.result, { created: 'ada_l', bio: '&lt;b&gt;hi&lt;/b&gt;' })
  }
  t.equal(handlerCalls(), 2)
})

t.test('endpoints without a declaration are untouched', async (t) => {
  const { fastify } = await app()
  const res = await fastify.inject({ method: 'POST', url: '/plain', payload: { email: 'nope' } })
  t.same(res.json(), { email: 'nope' })
})

t.test('a custom rule function; errors that are not validation errors propagate', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.use(validationMiddleware(), { name: 'validation' })
  fastify.trivium.endpoint(
    'even',
    {
      method: 'POST',
      url: '/even',
      validate: {
        n: (value, field) => {
          if (typeof value !== 'number' || value % 2 !== 0)
            throw new ValidationException('Must be even', [{ field, message: 'Must be even' }])
        },
        boom: {
          rule: () => {
            throw new Error('bug in rule')
          },
          optional: true,
        },
      },
    },
    (req) => req,
  )
  let res = await fastify.inject({ method: 'POST', url: '/even', payload: { n: 3 } })
  t.same(res.json().details, [{ field: 'n', message: 'Must be even' }])
  res = await fastify.inject({ method: 'POST', url: '/even', payload: { n: 2, boom: 1 } })
  t.equal(res.statusCode, 500)
  t.equal(res.json().message, 'Internal server error')
})

t.test('a bad declaration fails at ready()', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  await fastify.register(triviumValidation)
  fastify.trivium.endpoint(
    'typo',
    { method: 'POST', url: '/typo', validate: { email: 'emial' as never } },
    () => ({}),
  )
  await t.rejects(async () => fastify.ready(), {
    message: '@trivium/validation: endpoint "typo": unknown rule "emial" for field "email"',
    code: 'TRV_VALIDATION_RULE',
  })
})

t.test('plugin option after: runs after the named middleware, order checked at ready()', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  await fastify.register(triviumValidation, { after: ['auth'] })
  await t.rejects(async () => fastify.ready(), { code: 'TRV_MIDDLEWARE_ORDER' })
})
