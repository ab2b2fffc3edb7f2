import trivium, { RegistrationError } from '@trivium/core'
import { ENDPOINT_NAME_PATTERN } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  return fastify
}

t.test('endpoint names are validated', async (t) => {
  const fastify = await app()
  for (const bad of [
    '',
    '1tasks',
    'tasks..create',
    'tasks.',
    '.tasks',
    'tasks/create',
    '../admin',
    'tâches',
    'a b',
  ]) {
    t.throws(
      () => fastify.trivium.endpoint(bad, { method: 'GET', url: `/x${Math.random()}` }, () => ({})),
      {
        name: 'RegistrationError',
        code: 'TRV_REGISTRATION',
        message: `@trivium/core: invalid endpoint name ${JSON.stringify(bad)}: use dot-separated segments of letters, digits, "_" and "-", each starting with a letter`,
      },
      `rejects ${JSON.stringify(bad)}`,
    )
  }
  for (const good of ['health', 'tasks.create', 'auth.totp.confirm', 'a_b-c.D9'])
    t.ok(ENDPOINT_NAME_PATTERN.test(good), good)
  t.throws(() => fastify.trivium.endpoint('a'.repeat(256), { method: 'GET', url: '/long' }, () => ({})), {
    message: `@trivium/core: endpoint name "${'a'.repeat(256)}" is longer than 255 bytes`,
  })
})

t.test('a duplicate name or route fails at registration', async (t) => {
  const fastify = await app()
  fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, () => ({}))
  t.throws(() => fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/other' }, () => ({})), {
    message: '@trivium/core: endpoint "tasks.get" is already registered',
  })
  t.throws(
    () => fastify.trivium.endpoint('tasks.read', { method: 'GET', url: '/tasks/:taskId' }, () => ({})),
    {
      message:
        '@trivium/core: endpoint "tasks.read": route GET /tasks/:taskId is already used by "tasks.get"',
    },
  )
  // Same path, other method: a different route.
  fastify.trivium.endpoint('tasks.delete', { method: 'DELETE', url: '/tasks/:id' }, () => ({}))
  t.ok(fastify.trivium.registry.has('tasks.delete'))
})

t.test('options are checked', async (t) => {
  const fastify = await app()
  t.throws(() => fastify.trivium.endpoint('a', { method: 'PATCH' as 'GET', url: '/a' }, () => ({})), {
    message: '@trivium/core: endpoint "a": method must be one of GET, POST, PUT, DELETE, got PATCH',
  })
  t.throws(() => fastify.trivium.endpoint('a', { method: 'GET', url: 'a' }, () => ({})), {
    message: '@trivium/core: endpoint "a": url must be a path starting with "/"',
  })
  t.throws(() => fastify.trivium.endpoint('a', { method: 'GET', url: '/a', status: 404 }, () => ({})), {
    message: '@trivium/core: endpoint "a": status must be a 2xx code',
  })
  t.throws(() => fastify.trivium.endpoint('a', { method: 'GET', url: '/a' }, 'nope' as never), {
    message: '@trivium/core: endpoint "a": handler must be a function',
  })
  t.throws(
    () =>
      fastify.trivium.stream('s', { method: 'DELETE', url: '/s' }, async function* () {
        yield 1
      }),
    { message: '@trivium/core: streaming endpoint "s" must use GET or POST' },
  )
  // Streams of requests (PROTOCOL.md "Client and bidirectional streams"): POST only.
  t.throws(() => fastify.trivium.clientStream('c', { method: 'GET', url: '/c' }, async () => ({})), {
    message: '@trivium/core: endpoint "c" takes a stream of requests and must use POST',
  })
  t.throws(
    () =>
      fastify.trivium.bidiStream('b', { method: 'PUT', url: '/b' }, async function* () {
        yield 1
      }),
    { message: '@trivium/core: endpoint "b" takes a stream of requests and must use POST' },
  )
  const client = fastify.trivium.clientStream('c', { method: 'POST', url: '/c' }, async () => ({}))
  t.same([client.streaming, client.requestStream], [false, true])
  const bidi = fastify.trivium.bidiStream('b', { method: 'POST', url: '/b' }, async function* () {
    yield 1
  })
  t.same([bidi.streaming, bidi.requestStream], [true, true])
})

t.test('registration after start fails', async (t) => {
  const fastify = await app()
  await fastify.ready()
  t.throws(
    () => fastify.trivium.endpoint('late', { method: 'GET', url: '/late' }, () => ({})),
    RegistrationError,
  )
  t.throws(() => fastify.trivium.endpoint('late', { method: 'GET', url: '/late' }, () => ({})), {
    message: '@trivium/core: cannot register "late" after the server has started',
  })
})

t.test('plugin options are validated', async (t) => {
  const fastify = Fastify()
  await t.rejects(async () => fastify.register(trivium, { bodyLimit: -1 }).ready(), {
    code: 'TRV_CORE_BODY_LIMIT',
    message: '@trivium/core: bodyLimit must be a positive integer (bytes)',
  })
})

t.test('the registry is the one table: name → route → handler → models', async (t) => {
  const fastify = await app()
  const handler = () => ({ ok: true })
  const def = fastify.trivium.endpoint(
    'health',
    { method: 'GET', url: '/health', summary: 'Health' },
    handler,
  )
  t.equal(fastify.trivium.registry.get('health'), def)
  t.equal(def.handler, handler)
  t.equal(def.url, '/health')
  t.equal(def.streaming, false)
  t.equal(def.config.summary, 'Health')
  t.same(
    fastify.trivium.registry.list().map((d) => d.name),
    ['health'],
  )
})
