import { Writable } from 'node:stream'
import trivium, {
  ForbiddenException,
  InternalErrorException,
  isTriviumError,
  jsonSchemaModel,
  NotFoundException,
  RateLimitExceededException,
  TokenExpiredException,
  toErrorBody,
  UnauthorizedException,
  ValidationException,
} from '@trivium/core'
import { fromErrorBody } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

const cases = [
  {
    make: () => new UnauthorizedException('Authentication required'),
    status: 401,
    code: 'TRV_UNAUTHORIZED',
    kind: 'UnauthorizedException',
  },
  {
    make: () => new TokenExpiredException('Token has expired'),
    status: 401,
    code: 'TRV_TOKEN_EXPIRED',
    kind: 'TokenExpiredException',
  },
  {
    make: () => new ForbiddenException('Insufficient permissions. Required: a, b'),
    status: 403,
    code: 'TRV_FORBIDDEN',
    kind: 'ForbiddenException',
  },
  {
    make: () => new ValidationException('Invalid email format'),
    status: 400,
    code: 'TRV_VALIDATION',
    kind: 'ValidationException',
  },
  {
    make: () => new NotFoundException('Task 7 not found'),
    status: 404,
    code: 'TRV_NOT_FOUND',
    kind: 'NotFoundException',
  },
  {
    make: () => new RateLimitExceededException(12),
    status: 429,
    code: 'TRV_RATE_LIMITED',
    kind: 'RateLimitExceededException',
  },
] as const

for (const c of cases) {
  t.test(`${c.kind} → HTTP ${c.status} with the common body`, async (t) => {
    const fastify = Fastify()
    await fastify.register(trivium)
    const error = c.make()
    fastify.trivium.endpoint('fail', { method: 'GET', url: '/fail' }, () => {
      throw error
    })
    const res = await fastify.inject('/fail')
    t.equal(res.statusCode, c.status)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    const body = res.json()
    t.equal(body.statusCode, c.status)
    t.equal(body.code, c.code)
    t.equal(body.error, c.kind)
    t.equal(body.message, error.message)
    t.match(body.requestId, /^req-/)
    t.notOk('stack' in body)
    t.equal(error.name, c.kind)
    t.ok(isTriviumError(error))
  })
}

t.test('RateLimitExceededException carries retryAfter, the spec message and Retry-After', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.endpoint('limited', { method: 'GET', url: '/limited' }, () => {
    throw new RateLimitExceededException(42)
  })
  const res = await fastify.inject('/limited')
  t.equal(res.statusCode, 429)
  t.equal(res.headers['retry-after'], '42')
  t.equal(res.json().message, 'Rate limit exceeded. Try again in 42 seconds')
  t.equal(res.json().retryAfter, 42)
})

t.test('ValidationException details name the fields', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  const Register = jsonSchemaModel('RegisterRequest', {
    type: 'object',
    properties: { username: { type: 'string' }, age: { type: 'integer' } },
    required: ['username'],
  })
  fastify.trivium.endpoint('register', { method: 'POST', url: '/register', request: Register }, (r) => r)
  const res = await fastify.inject({ method: 'POST', url: '/register', payload: { age: 'old' } })
  t.equal(res.statusCode, 400)
  t.same(res.json().details, [
    { field: 'username', message: 'is required' },
    { field: 'age', message: 'must be integer' },
  ])
  t.equal(res.json().message, 'Invalid RegisterRequest: username is required')
})

t.test(
  'an unexpected error never leaks its message or stack; it is logged with the request id',
  async (t) => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString())
        cb()
      },
    })
    const fastify = Fastify({ logger: { level: 'error', stream } })
    await fastify.register(trivium)
    fastify.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
      throw new Error('db password is hunter2 at /srv/app.js:12')
    })
    const res = await fastify.inject('/boom')
    t.equal(res.statusCode, 500)
    const body = res.json()
    t.same(body, {
      statusCode: 500,
      code: 'TRV_INTERNAL',
      error: 'InternalErrorException',
      message: 'Internal server error',
      requestId: body.requestId,
    })
    t.notMatch(res.body, /hunter2|app\.js|at /)
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'unhandled error in endpoint')
    t.ok(logged, 'the original error is logged')
    t.equal(logged.requestId, body.requestId)
    t.match(logged.err.message, /hunter2/)
  },
)

t.test('unknown routes get NotFoundException in the common shape (notFoundHandler: true)', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium, { notFoundHandler: true })
  const res = await fastify.inject('/nowhere?x=1')
  t.equal(res.statusCode, 404)
  t.same(res.json(), {
    statusCode: 404,
    code: 'TRV_NOT_FOUND',
    error: 'NotFoundException',
    message: 'Route GET /nowhere not found',
    requestId: res.json().requestId,
  })
  // A guest by default: Fastify's own 404 stays.
  const guest = Fastify()
  await guest.register(trivium)
  t.same((await guest.inject('/nowhere?x=1')).json(), {
    message: 'Route GET:/nowhere?x=1 not found',
    error: 'Not Found',
    statusCode: 404,
  })
})

t.test('bodies: wrong content type 415, malformed JSON 400, over the limit 413', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium, { bodyLimit: 64 })
  fastify.trivium.endpoint('c', { method: 'POST', url: '/c' }, (r) => r)
  const text = await fastify.inject({
    method: 'POST',
    url: '/c',
    payload: 'hi',
    headers: { 'content-type': 'text/plain' },
  })
  t.equal(text.statusCode, 415)
  t.equal(text.json().error, 'UnsupportedMediaTypeException')
  const xml = await fastify.inject({
    method: 'POST',
    url: '/c',
    payload: '<a/>',
    headers: { 'content-type': 'application/xml' },
  })
  t.equal(xml.statusCode, 415)
  t.equal(xml.json().code, 'TRV_UNSUPPORTED_MEDIA_TYPE')
  const bad = await fastify.inject({
    method: 'POST',
    url: '/c',
    payload: '{"a":',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(bad.statusCode, 400)
  t.same([bad.json().code, bad.json().message], ['TRV_VALIDATION', 'Request body is not valid JSON'])
  const proto = await fastify.inject({
    method: 'POST',
    url: '/c',
    payload: '{"__proto__":{"x":1}}',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(proto.statusCode, 400, 'prototype poisoning is refused')
  const big = await fastify.inject({ method: 'POST', url: '/c', payload: { s: 'x'.repeat(200) } })
  t.equal(big.statusCode, 413)
  t.same([big.json().code, big.json().message], ['TRV_PAYLOAD_TOO_LARGE', 'Request body is too large'])
})

t.test('toErrorBody / fromErrorBody round-trip every kind', async (t) => {
  for (const c of cases) {
    const original = c.make()
    const rebuilt = fromErrorBody(toErrorBody(original, 'r1'))
    t.equal(rebuilt.name, original.name)
    t.equal(rebuilt.code, original.code)
    t.equal(rebuilt.message, original.message)
    t.equal(rebuilt.statusCode, original.statusCode)
  }
  const rl = fromErrorBody(toErrorBody(new RateLimitExceededException(9))) as RateLimitExceededException
  t.equal(rl.retryAfter, 9)
  const v = fromErrorBody(
    toErrorBody(new ValidationException('x', [{ field: 'f', message: 'm' }])),
  ) as ValidationException
  t.same(v.details, [{ field: 'f', message: 'm' }])
  t.equal(fromErrorBody({ code: 'WHAT', message: 'x' }).name, 'InternalErrorException')
  t.ok(new InternalErrorException('x') instanceof InternalErrorException)
  t.notOk(new InternalErrorException('x') instanceof NotFoundException)
})

t.test('an endpoint can raise its own body limit', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium, { bodyLimit: 64 })
  fastify.trivium.endpoint('small', { method: 'POST', url: '/small' }, () => ({ ok: true }))
  fastify.trivium.endpoint('upload', { method: 'POST', url: '/upload', bodyLimit: 4096 }, () => ({
    ok: true,
  }))
  t.throws(() => fastify.trivium.endpoint('bad', { method: 'POST', url: '/bad', bodyLimit: 0 }, () => ({})), {
    message: '@trivium/core: endpoint "bad": bodyLimit must be a positive integer (bytes)',
  })
  const payload = { s: 'x'.repeat(200) }
  t.equal((await fastify.inject({ method: 'POST', url: '/small', payload })).statusCode, 413)
  t.equal((await fastify.inject({ method: 'POST', url: '/upload', payload })).statusCode, 200)
})
