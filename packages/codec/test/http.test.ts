import { binaryFormat, triviumCodec } from '@trivium/codec'
import trivium, { ValidationException } from '@trivium/core'
import { enforcesSettings } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'
import { CreateTask, Tag, Task, TaskEvent } from './generated/tasks/models.js'
import { registerEndpoints } from './generated/tasks/server.js'

const BINARY = 'application/x-platform-binary'

async function app(options: { bodyLimit?: number } = {}) {
  const fastify = Fastify()
  await fastify.register(trivium, options)
  await fastify.register(triviumCodec)
  // The schema's rules (auth, permissions, rate limits) are other plugins' to enforce (tested there);
  // these tests are about formats, so a stand-in declares them enforced (core refuses to start with a
  // rule nothing enforces).
  fastify.trivium.use(
    enforcesSettings(['auth', 'permissions', 'roles', 'rateLimit', 'validate'], (_call, next) => next()),
    { name: 'auth-not-under-test' },
  )
  let nextId = 1n
  registerEndpoints(fastify.trivium, {
    'tasks.create': (req) =>
      new Task({
        id: nextId++,
        title: req.title,
        done: false,
        tags: req.tags,
        due: req.due,
        owner: new Tag({ name: 'me' }),
      }),
    'tasks.get': (req) => ({ id: req.id, title: `task ${req.id}`, done: true, tags: [] }),
    'tasks.watch': async function* (req) {
      for (let i = 0; i < req.limit; i++) {
        yield { kind: 'created', task: { id: BigInt(i), title: `t${i}`, done: false, tags: [] } }
      }
    },
    health: () => ({}),
  })
  await fastify.ready()
  t.teardown(() => fastify.close())
  return fastify
}

t.test('JSON in, JSON out (201 from the schema), int64 as a string', async (t) => {
  const f = await app()
  const r = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: { title: 'a', tags: ['x'], due: '2024-01-01T00:00:00Z' },
  })
  t.equal(r.statusCode, 201)
  t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
  t.same(r.json(), {
    id: '1',
    title: 'a',
    done: false,
    tags: ['x'],
    due: '2024-01-01T00:00:00.000Z',
    owner: { name: 'me', color: null },
  })
  const g = await f.inject({ method: 'GET', url: '/tasks/9007199254740993' })
  t.equal(g.statusCode, 200)
  t.same(g.json(), {
    id: '9007199254740993',
    title: 'task 9007199254740993',
    done: true,
    tags: [],
    due: null,
  })
})

t.test('binary in, binary out, with Content-Type and Content-Length', async (t) => {
  const f = await app()
  const body = CreateTask.encode({ title: 'bin', tags: ['a', 'b'] })
  const r = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: Buffer.from(body),
    headers: { 'content-type': BINARY, accept: BINARY },
  })
  t.equal(r.statusCode, 201)
  t.equal(r.headers['content-type'], BINARY)
  t.equal(Number(r.headers['content-length']), r.rawPayload.length)
  const task = Task.decode(new Uint8Array(r.rawPayload))
  t.ok(
    task.equals(
      new Task({ id: 1n, title: 'bin', done: false, tags: ['a', 'b'], owner: new Tag({ name: 'me' }) }),
    ),
  )
  // with no Accept the response takes the request's format
  const r2 = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: Buffer.from(body),
    headers: { 'content-type': BINARY },
  })
  t.equal(r2.headers['content-type'], BINARY)
  // binary request, JSON response
  const r3 = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: Buffer.from(body),
    headers: { 'content-type': BINARY, accept: 'application/json' },
  })
  t.equal(r3.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(r3.json().title, 'bin')
  // GET with Accept binary
  const g = await f.inject({ method: 'GET', url: '/tasks/5', headers: { accept: BINARY } })
  t.equal(g.headers['content-type'], BINARY)
  t.equal(Task.decode(new Uint8Array(g.rawPayload)).id, 5n)
})

t.test('415 for an unsupported Content-Type', async (t) => {
  const f = await app()
  const r = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: 'title=a',
    headers: { 'content-type': 'text/plain' },
  })
  t.equal(r.statusCode, 415)
  t.same(r.json(), {
    statusCode: 415,
    code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
    error: 'UnsupportedMediaTypeException',
    message: 'Unsupported Content-Type',
    requestId: r.json().requestId,
  })
})

t.test('malformed binary body: 400 ValidationException in the common error shape', async (t) => {
  const f = await app()
  const good = CreateTask.encode({ title: 'x', tags: [] })
  const cases: [Uint8Array, string][] = [
    [good.subarray(0, 7), 'Malformed binary payload: length 10 at offset 1 exceeds the 2 bytes left'],
    [
      new Uint8Array([1, 5, 0, 0, 0, 1, 0, 0, 0, 0x78]),
      'Malformed binary payload: truncated: needed 4 bytes at offset 10, 0 left',
    ],
    [
      new Uint8Array([...good, 0]),
      'Malformed binary payload: 1 trailing bytes after the message at offset 15',
    ],
    [
      new Uint8Array([2, ...good.subarray(1)]),
      'Malformed binary payload: unsupported binary format version 2 (this reader knows 1)',
    ],
    [
      new Uint8Array([1, 0xff, 0xff, 0xff, 0x7f]),
      'Malformed binary payload: length 2147483647 at offset 1 exceeds the 0 bytes left',
    ],
  ]
  const bad = good.slice()
  bad[9] = 0xff // the title's only byte
  cases.push([bad, 'Malformed binary payload: invalid UTF-8 in string at offset 5'])
  for (const [payload, message] of cases) {
    const r = await f.inject({
      method: 'POST',
      url: '/tasks',
      payload: Buffer.from(payload),
      headers: { 'content-type': BINARY },
    })
    t.equal(r.statusCode, 400)
    t.equal(r.headers['content-type'], 'application/json; charset=utf-8')
    const body = r.json()
    t.same(body, {
      statusCode: 400,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message,
      requestId: body.requestId,
    })
  }
})

t.test('JSON validation errors carry details (core ValidationException)', async (t) => {
  const f = await app()
  const r = await f.inject({ method: 'POST', url: '/tasks', payload: { title: 5, tags: 'x' } })
  t.equal(r.statusCode, 400)
  const body = r.json()
  t.equal(body.message, 'Invalid CreateTask: title must be string')
  t.same(body.details, [
    { field: 'title', message: 'must be string' },
    { field: 'tags', message: 'must be array' },
  ])
  t.throws(() => CreateTask.fromJSON({}), ValidationException, 'the server entry installs core’s class')
  t.ok(
    (() => {
      try {
        CreateTask.fromJSON({})
      } catch (e) {
        return e instanceof ValidationException
      }
      return false
    })(),
  )
})

t.test('413 for a body over the limit', async (t) => {
  const f = await app({ bodyLimit: 64 })
  const body = CreateTask.encode({ title: 'x'.repeat(200), tags: [] })
  const r = await f.inject({
    method: 'POST',
    url: '/tasks',
    payload: Buffer.from(body),
    headers: { 'content-type': BINARY },
  })
  t.equal(r.statusCode, 413)
  t.equal(r.json().error, 'PayloadTooLargeException')
})

t.test('streaming endpoint from the schema (SSE, JSON items)', async (t) => {
  const f = await app()
  const r = await f.inject({ method: 'POST', url: '/tasks/watch', payload: { limit: 2 } })
  t.equal(r.statusCode, 200)
  t.match(r.headers['content-type'], /^text\/event-stream/)
  const items = [...r.body.matchAll(/event: item\ndata: (.*)\n/g)].map((m) =>
    TaskEvent.fromJSON(JSON.parse(m[1]!)),
  )
  t.equal(items.length, 2)
  t.equal(items[1]!.task.id, 1n)
})

t.test('binaryFormat and the plugin', async (t) => {
  t.equal(binaryFormat.name, 'binary')
  t.equal(binaryFormat.contentType, BINARY)
  const f = await app()
  t.equal(f.trivium.formats.get('binary'), binaryFormat)
  t.equal(
    (await f.inject({ method: 'GET', url: '/health', headers: { accept: BINARY } })).rawPayload.length,
    5,
  )
  const noCore = Fastify()
  await t.rejects(async () => noCore.register(triviumCodec).ready(), /@trivium\/core/)
  t.throws(() => binaryFormat.decode({ name: 'X', fromJSON: (j) => j, toJSON: (v) => v }, new Uint8Array()), {
    code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
  })
})
