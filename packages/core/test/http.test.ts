import { once } from 'node:events'
import trivium, { jsonSchemaModel } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

const Task = jsonSchemaModel<{ id: number; title: string; done: boolean }>('Task', {
  type: 'object',
  properties: { id: { type: 'integer' }, title: { type: 'string' }, done: { type: 'boolean' } },
  required: ['id', 'title', 'done'],
})
const CreateTask = jsonSchemaModel<{ title: string }>('CreateTask', {
  type: 'object',
  properties: { title: { type: 'string', minLength: 1 } },
  required: ['title'],
})
const ListTasks = jsonSchemaModel<{ done?: boolean; limit?: number; tag?: string[] }>('ListTasks', {
  type: 'object',
  properties: {
    done: { type: 'boolean' },
    limit: { type: 'integer', minimum: 1 },
    tag: { type: 'array', items: { type: 'string' } },
  },
})
const UpdateTask = jsonSchemaModel<{ id: number; title?: string; done?: boolean }>('UpdateTask', {
  type: 'object',
  properties: { id: { type: 'integer' }, title: { type: 'string' }, done: { type: 'boolean' } },
  required: ['id'],
})

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  let next = 1
  fastify.trivium.endpoint(
    'tasks.create',
    { method: 'POST', url: '/tasks', request: CreateTask, response: Task, status: 201 },
    (req) => ({ id: next++, title: req.title, done: false }),
  )
  fastify.trivium.endpoint('tasks.list', { method: 'GET', url: '/tasks', request: ListTasks }, (req) => ({
    query: req,
  }))
  fastify.trivium.endpoint(
    'tasks.update',
    { method: 'PUT', url: '/tasks/:id', request: UpdateTask },
    (req) => req,
  )
  return fastify
}

t.test('a create over POST answers 201 with the created object', async (t) => {
  const fastify = await app()
  const res = await fastify.inject({ method: 'POST', url: '/tasks', payload: { title: 'write spec' } })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)))
  t.same(res.json(), { id: 1, title: 'write spec', done: false })
})

t.test('GET fields come from the query, converted to the model types', async (t) => {
  const fastify = await app()
  const res = await fastify.inject('/tasks?done=true&limit=10&tag=a&tag=b&token=secret')
  t.same(
    res.json(),
    { query: { done: true, limit: 10, tag: ['a', 'b'] } },
    'token is not a model field and is dropped',
  )
  const one = await fastify.inject('/tasks?tag=solo')
  t.same(one.json(), { query: { tag: ['solo'] } })
  const bad = await fastify.inject('/tasks?limit=ten')
  t.equal(bad.statusCode, 400)
  t.same(bad.json().details, [{ field: 'limit', message: 'must be integer' }])
})

t.test('path params are merged into the body model', async (t) => {
  const fastify = await app()
  const res = await fastify.inject({ method: 'PUT', url: '/tasks/42', payload: { title: 't', id: 1 } })
  t.same(res.json(), { title: 't', id: 42 }, 'the path wins over the body')
  const bad = await fastify.inject({ method: 'PUT', url: '/tasks/abc', payload: { title: 't' } })
  t.equal(bad.statusCode, 400)
})

t.test('HttpMapping.toHttp builds the request that fromHttp reads back', async (t) => {
  const fastify = await app()
  const update = fastify.trivium.registry.get('tasks.update')!
  t.same(update.http.toHttp({ id: 7, title: 'x/y' }), {
    method: 'PUT',
    url: '/tasks/7',
    body: { title: 'x/y' },
  })
  const list = fastify.trivium.registry.get('tasks.list')!
  t.same(list.http.toHttp({ done: false, tag: ['a b', 'c'] }), {
    method: 'GET',
    url: '/tasks?done=false&tag=a+b&tag=c',
    body: undefined,
  })
  t.throws(() => update.http.toHttp({ title: 'no id' }), {
    code: 'TRV_VALIDATION',
    message: 'Invalid request: id is required',
  })
  t.throws(() => list.http.toHttp({ tag: { nested: 1 } }), { code: 'TRV_VALIDATION' })
  // A path param can never inject path segments.
  t.equal(update.http.toHttp({ id: '../admin' }).url, '/tasks/..%2Fadmin')
  const parts = list.http.toHttp({ done: true, limit: 3 })
  const res = await fastify.inject({ method: parts.method, url: parts.url })
  t.same(res.json(), { query: { done: true, limit: 3 } })
})

t.test('handlers get the common request form, a request id, a logger and an AbortSignal', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.trivium.endpoint('whoami', { method: 'GET', url: '/whoami' }, (_req, call) => ({
    endpoint: call.endpoint,
    protocol: call.protocol,
    method: call.method,
    clientIp: call.clientIp,
    requestId: call.requestId,
    hasLog: typeof call.log.info === 'function',
    aborted: call.signal.aborted,
    header: call.headers['x-test'],
  }))
  const res = await fastify.inject({
    url: '/whoami',
    headers: { 'x-test': 'yes' },
    remoteAddress: '10.0.0.9',
  })
  t.same(res.json(), {
    endpoint: 'whoami',
    protocol: 'http',
    method: 'GET',
    clientIp: '10.0.0.9',
    requestId: res.json().requestId,
    hasLog: true,
    aborted: false,
    header: 'yes',
  })
})

t.test('the deadline aborts the handler signal and answers TimeoutException', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  let seen: unknown
  fastify.trivium.endpoint('slow', { method: 'GET', url: '/slow', timeoutMs: 20 }, async (_req, call) => {
    await once(call.signal, 'abort')
    seen = call.signal.reason
    return { late: true }
  })
  const res = await fastify.inject('/slow')
  t.equal(res.statusCode, 504)
  t.same(res.json(), {
    statusCode: 504,
    code: 'TRV_TIMEOUT',
    error: 'TimeoutException',
    message: 'Deadline of 20 ms exceeded',
    requestId: res.json().requestId,
  })
  t.match(seen, { name: 'TimeoutException', code: 'TRV_TIMEOUT', message: 'Deadline of 20 ms exceeded' })
})

t.test('streaming endpoints over HTTP are Server-Sent Events', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  let finished = false
  fastify.trivium.stream('count', { method: 'GET', url: '/count' }, async function* () {
    try {
      for (let i = 1; i <= 3; i++) yield { n: i }
    } finally {
      finished = true
    }
  })
  fastify.trivium.stream('broken', { method: 'GET', url: '/broken' }, async function* () {
    yield { n: 1 }
    throw new Error('secret detail')
  })
  const res = await fastify.inject('/count')
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8')
  t.equal(
    res.body,
    ': stream open\n\nid: 0\nevent: item\ndata: {"n":1}\n\nid: 1\nevent: item\ndata: {"n":2}\n\nid: 2\nevent: item\ndata: {"n":3}\n\nevent: end\ndata: {}\n\n',
  )
  t.ok(finished)
  const broken = await fastify.inject('/broken')
  t.match(
    broken.body,
    /event: error\ndata: \{"statusCode":500,"code":"TRV_INTERNAL","error":"InternalErrorException","message":"Internal server error"/,
  )
  t.notMatch(broken.body, /secret detail/)
})

t.test('closing an SSE connection stops the generator', async (t) => {
  // forceCloseConnections: under tap the aborted fetch's connection stayed open until Fastify's 72 s
  // keep-alive timeout, so close() (and the test file) waited 70 s after the assertion had passed.
  const fastify = Fastify({ forceCloseConnections: true })
  await fastify.register(trivium)
  let resolveFinished: () => void
  const finished = new Promise<void>((r) => {
    resolveFinished = r
  })
  fastify.trivium.stream('forever', { method: 'GET', url: '/forever' }, async function* () {
    try {
      let i = 0
      while (true) {
        yield { i: i++ }
        await new Promise((r) => setTimeout(r, 5))
      }
    } finally {
      resolveFinished()
    }
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }
  const controller = new AbortController()
  const res = await fetch(`http://127.0.0.1:${port}/forever`, { signal: controller.signal })
  const reader = res.body!.getReader()
  let received = ''
  while (!received.includes('event: item')) received += Buffer.from((await reader.read()).value!).toString()
  t.match(received, /^: stream open\n\n/, 'headers and an opening comment come first')
  controller.abort()
  await finished
  t.pass('generator finally ran after the client left')
})

t.test('frames: unknown endpoint, invalid UTF-8 and bad JSON are typed errors', async (t) => {
  const fastify = await app()
  await fastify.ready()
  const base = { protocol: 'websocket' as const, format: jsonFormat, requestId: 'c:1', log: fastify.log }
  await t.rejects(fastify.trivium.invoke({ ...base, endpoint: '../admin', payload: new Uint8Array() }), {
    code: 'TRV_NOT_FOUND',
    message: 'Unknown endpoint: ../admin',
  })
  await t.rejects(
    fastify.trivium.invoke({
      ...base,
      endpoint: 'tasks.create',
      payload: Uint8Array.from([0x7b, 0xff, 0x7d]),
    }),
    {
      code: 'TRV_VALIDATION',
      message: 'Payload is not valid UTF-8',
    },
  )
  await t.rejects(
    fastify.trivium.invoke({ ...base, endpoint: 'tasks.create', payload: Buffer.from('{"title":') }),
    {
      code: 'TRV_VALIDATION',
      message: 'Request body is not valid JSON',
    },
  )
  const ok = await fastify.trivium.invoke({
    ...base,
    endpoint: 'tasks.create',
    payload: Buffer.from('{"title":"x"}'),
  })
  t.same(ok.result, { id: 1, title: 'x', done: false })
})

t.test(
  'a POST handler signal stays unaborted while the client waits, and aborts when it leaves',
  async (t) => {
    const fastify = Fastify()
    await fastify.register(trivium)
    let resolveAborted: (v: boolean) => void
    const aborted = new Promise<boolean>((r) => {
      resolveAborted = r
    })
    let resolveListening: () => void
    const listening = new Promise<void>((r) => {
      resolveListening = r
    })
    fastify.trivium.endpoint('slow.post', { method: 'POST', url: '/slow-post' }, async (_req, call) => {
      await new Promise((r) => setTimeout(r, 50))
      const early = call.signal.aborted
      if (early) return { early }
      call.signal.addEventListener('abort', () => resolveAborted(true))
      resolveListening()
      await new Promise((r) => setTimeout(r, 2000))
      return { early }
    })
    fastify.trivium.endpoint('quick.post', { method: 'POST', url: '/quick-post' }, async (_req, call) => {
      await new Promise((r) => setTimeout(r, 30))
      return { aborted: call.signal.aborted }
    })
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => fastify.close())
    const { port } = fastify.server.address() as { port: number }
    const quick = await fetch(`http://127.0.0.1:${port}/quick-post`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    })
    t.same(await quick.json(), { aborted: false }, 'reading the body does not abort the signal')
    const controller = new AbortController()
    const pending = fetch(`http://127.0.0.1:${port}/slow-post`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
      signal: controller.signal,
    }).catch(() => undefined)
    // The client leaves once the handler has seen its signal unaborted and listens (not after a fixed time).
    await listening
    controller.abort()
    await pending
    t.equal(await aborted, true, 'the signal aborts when the client goes away')
  },
)
