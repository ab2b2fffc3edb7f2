// Issue 41 item 2: endpoints whose models are TypeBox and Zod schemas, on every transport over real
// sockets — HTTP, WebSocket, TCP direct and TCP inject: per-field validation errors whichever library
// produced them, an async validator, a validator that throws (500, logged once, the server goes on),
// issues with no path, the derived binary form, and a binary request for a JSON-only model (415).
import { Writable } from 'node:stream'
import { createClient, type WebSocketConstructor } from '@trivium/client/node'
import { triviumCodec } from '@trivium/codec'
import { deriveBinaryForm } from '@trivium/codec/runtime'
import triviumCore, { type StandardSchemaV1 } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import Type from 'typebox'
import * as z from 'zod'
import { registerMemoryTransport } from './memory-transport.ts'
import { type RawTarget, rawCall } from './raw-call.ts'

const Count = { minimum: 0, maximum: 1000 }
const AddRequest = Type.Object({ a: Type.Integer(Count), b: Type.Integer(Count) }, { title: 'AddRequest' })
const AddResponse = Type.Object({ sum: Type.Integer({ minimum: 0, maximum: 2000 }) })
const TagRequest = z.object({ name: z.string().min(2), tags: z.array(z.string()) })
const CheckRequest = z.object({ code: z.string().refine(async (code) => code === 'ok', 'is not ok') })
const Unbounded = Type.Object({ n: Type.Integer() }, { title: 'Unbounded' })
/** A response with no binary layout (the binary format has no "any value"). */
const Loose = Type.Object({ value: Type.Unknown() })

/** A Standard Schema whose validator throws: a bug in the schema, not a bad request. */
const throwing: StandardSchemaV1 = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: () => {
      throw new Error('validator bug')
    },
  },
}
/** A Standard Schema that refuses the whole value (an issue without a path). */
const pathless: StandardSchemaV1 = {
  '~standard': { version: 1, vendor: 'test', validate: () => ({ issues: [{ message: 'must be a pair' }] }) },
}

async function start(mode: 'direct' | 'inject', logs: string[]) {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk))
      done()
    },
  })
  const app = Fastify({ logger: { level: 'info', stream } })
  await app.register(triviumCore)
  await app.register(triviumCodec)
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0, mode })
  const memory = registerMemoryTransport(app)
  const post = (url: string) => ({ method: 'POST' as const, url })
  app.trivium.endpoint('tb.add', { ...post('/add'), request: AddRequest, response: AddResponse }, (r) => ({
    sum: r.a + r.b,
  }))
  app.trivium.endpoint('zod.tag', { ...post('/tag'), request: TagRequest }, (r) => ({ tags: r.tags.length }))
  app.trivium.endpoint('zod.check', { ...post('/check'), request: CheckRequest }, (r) => ({ code: r.code }))
  app.trivium.endpoint('json.only', { ...post('/unbounded'), request: Unbounded }, (r) => ({ n: r.n }))
  let looseRuns = 0
  app.trivium.endpoint('tb.loose', { ...post('/loose'), request: AddRequest, response: Loose }, (r) => {
    looseRuns++
    return { value: [r.a, r.b] }
  })
  app.trivium.endpoint('throws', { ...post('/throws'), request: throwing }, () => ({}))
  app.trivium.endpoint('pathless', { ...post('/pathless'), request: pathless }, () => ({}))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const tcpPort = app.triviumTcp.address()?.port as number
  return {
    app,
    httpUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    tcpPort,
    looseRuns: () => looseRuns,
    memory,
  }
}

const directLogs: string[] = []
const injectLogs: string[] = []
const direct = start('direct', directLogs)
const inject = start('inject', injectLogs)
t.teardown(async () => {
  await (await direct).app.close()
  await (await inject).app.close()
})

const TARGETS = ['http', 'websocket', 'tcp-direct', 'tcp-inject'] as const
async function targetOf(
  name: (typeof TARGETS)[number],
): Promise<{ target: RawTarget; logs: string[]; looseRuns: () => number }> {
  const server = await (name === 'tcp-inject' ? inject : direct)
  const transport = name === 'tcp-direct' || name === 'tcp-inject' ? 'tcp' : name
  return {
    target: { ...server, transport },
    logs: name === 'tcp-inject' ? injectLogs : directLogs,
    looseRuns: server.looseRuns,
  }
}

const addForm = deriveBinaryForm(AddRequest)
const sumForm = deriveBinaryForm(AddResponse)

for (const name of TARGETS) {
  t.test(`schemas as models over ${name}`, async (t) => {
    const { target, logs } = await targetOf(name)
    const call = (endpoint: string, url: string, body: unknown) =>
      rawCall(target, endpoint, 'POST', url, JSON.stringify(body))
    const ok = name === 'http' ? 200 : 'ok'

    const added = await call('tb.add', '/add', { a: 2, b: 3 })
    t.same([added.status, added.body], [ok, { sum: 5 }], 'TypeBox')
    const tb = await call('tb.add', '/add', { a: -1, b: 'x' })
    t.equal(tb.status, 400)
    t.match(tb.body, {
      code: 'TRV_VALIDATION',
      message: 'Invalid AddRequest: a must be >= 0',
      details: [
        { field: 'a', message: 'must be >= 0' },
        { field: 'b', message: 'must be integer' },
      ],
    })

    const zod = await call('zod.tag', '/tag', { name: 'x', tags: ['a', 2] })
    t.equal(zod.status, 400)
    t.same(
      zod.body.message,
      'Invalid zod.tag request: name Too small: expected string to have >=2 characters',
    )
    t.same(zod.body.details, [
      { field: 'name', message: 'Too small: expected string to have >=2 characters' },
      { field: 'tags.1', message: 'Invalid input: expected string, received number' },
    ])

    t.same((await call('zod.check', '/check', { code: 'ok' })).body, { code: 'ok' }, 'async validator passes')
    const refused = await call('zod.check', '/check', { code: 'no' })
    t.equal(refused.status, 400)
    t.same(refused.body.details, [{ field: 'code', message: 'is not ok' }], 'async validator refuses')

    const whole = await call('pathless', '/pathless', { a: 1 })
    t.equal(whole.status, 400)
    t.equal(whole.body.message, 'Invalid pathless request: (body) must be a pair')
    t.same(whole.body.details, [{ field: '(body)', message: 'must be a pair' }])

    const before = logs.filter((line) => line.includes('validator bug')).length
    const thrown = await call('throws', '/throws', {})
    t.equal(thrown.status, 500)
    t.match(thrown.body, { code: 'TRV_INTERNAL', message: 'Internal server error' })
    t.notMatch(JSON.stringify(thrown.body), /validator bug/, 'the fault is not shown to the client')
    t.equal(logs.filter((line) => line.includes('validator bug')).length, before + 1, 'logged once')
    t.same((await call('tb.add', '/add', { a: 1, b: 1 })).body, { sum: 2 }, 'the server goes on')
  })

  t.test(`binary over ${name}: derived for a TypeBox layout, 415 for a JSON-only model`, async (t) => {
    const { target } = await targetOf(name)
    const binary = { format: 'binary' as const }
    const answer = await rawCall(
      target,
      'tb.add',
      'POST',
      '/add',
      addForm?.encode({ a: 4, b: 5 }) ?? '',
      binary,
    )
    t.equal(answer.status, name === 'http' ? 200 : 'ok')
    t.same(sumForm?.decode(answer.bytes), { sum: 9 })
    // The layout only checks shapes: the schema's bounds still refuse the value.
    const bad = await rawCall(
      target,
      'tb.add',
      'POST',
      '/add',
      addForm?.encode({ a: 4, b: 5000 }) ?? '',
      binary,
    )
    t.equal(bad.status, 400)
    t.equal(bad.body.message, 'Invalid AddRequest: b must be <= 1000')
    const only = await rawCall(
      target,
      'json.only',
      'POST',
      '/unbounded',
      new Uint8Array([1, 4, 0, 0, 0]),
      binary,
    )
    t.equal(only.status, 415)
    t.match(only.body, {
      code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
      message: 'Endpoint json.only has no binary request format',
    })
  })
}

for (const name of TARGETS) {
  t.test(
    `binary over ${name}: a response model without a binary form is 406, before the handler`,
    async (t) => {
      const { target, looseRuns } = await targetOf(name)
      const before = looseRuns()
      const bytes = addForm?.encode({ a: 1, b: 2 }) ?? ''
      const asked = { format: 'binary' as const, accept: 'application/x-platform-binary' }
      const refused = await rawCall(target, 'tb.loose', 'POST', '/loose', bytes, asked)
      t.equal(refused.status, 406)
      t.match(refused.body, {
        statusCode: 406,
        code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
        error: 'UnsupportedMediaTypeException',
        message: 'Endpoint tb.loose has no binary response format',
      })
      t.equal(looseRuns(), before, 'the handler did not run')
      if (name === 'http') {
        t.equal(refused.contentType, 'application/json; charset=utf-8')
        // JSON acceptable too, or no Accept at all: the JSON answer is what was asked for.
        for (const accept of ['application/x-platform-binary, application/json;q=0.5', undefined]) {
          const meta = { format: 'binary' as const, ...(accept === undefined ? {} : { accept }) }
          const answer = await rawCall(target, 'tb.loose', 'POST', '/loose', bytes, meta)
          t.same([answer.status, answer.body], [200, { value: [1, 2] }], String(accept))
        }
        const json = await rawCall(target, 'tb.loose', 'POST', '/loose', '{"a":1,"b":2}', {
          accept: 'application/x-platform-binary',
        })
        t.equal(json.status, 406, 'a JSON request asking for a binary answer')
      }
      const fine = await rawCall(target, 'tb.loose', 'POST', '/loose', '{"a":3,"b":4}')
      t.same([fine.status, fine.body], [name === 'http' ? 200 : 'ok', { value: [3, 4] }], 'JSON is answered')
    },
  )
}

t.test(
  'in memory, through @trivium/client: a binary call to a JSON-only response model is 406',
  async (t) => {
    const server = await direct
    const loose = {
      name: 'tb.loose',
      method: 'POST' as const,
      url: '/loose',
      request: { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v, ...addForm },
      response: { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v },
      streaming: false,
    }
    const connect = (format: 'binary' | undefined) =>
      createClient({
        transport: 'websocket',
        url: 'ws://memory/',
        WebSocket: server.memory as unknown as WebSocketConstructor,
        endpoints: { loose },
        reconnectAttempts: 0,
        ...(format === undefined ? {} : { format }),
      })
    const binary = connect('binary')
    t.teardown(() => binary.close())
    const before = server.looseRuns()
    await t.rejects(binary.call(loose, { a: 1, b: 2 }), {
      name: 'UnsupportedMediaTypeException',
      code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
      message: 'Endpoint tb.loose has no binary response format',
    })
    t.equal(server.looseRuns(), before, 'the handler did not run')
    const chosen = connect(undefined)
    t.teardown(() => chosen.close())
    t.same(
      await chosen.call(loose, { a: 1, b: 2 }),
      { value: [1, 2] },
      'the client picks JSON for it by default',
    )
  },
)
