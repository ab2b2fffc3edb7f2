// Issue 17: a frame's payload is decoded by the frame rules whatever the mode. Inject mode used to map
// `{"id":"1"}` through the HTTP query/path coercion (accepted where direct mode answers 400) and to let
// Fastify's parser turn invalid UTF-8 into U+FFFD. Now both modes answer each frame identically.
import triviumCore, { jsonSchemaModel } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import { encodeMetadata, encodeTcpFrame, FrameType } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { dec, TcpClient } from './helpers.ts'

const GetItem = jsonSchemaModel('GetItem', {
  type: 'object',
  properties: { id: { type: 'integer' } },
  required: ['id'],
})
const ListItems = jsonSchemaModel('ListItems', {
  type: 'object',
  properties: { done: { type: 'boolean' }, tag: { type: 'array', items: { type: 'string' } } },
  additionalProperties: false,
})
const CreateItem = jsonSchemaModel('CreateItem', {
  type: 'object',
  properties: { title: { type: 'string' } },
  required: ['title'],
  additionalProperties: false,
})
const RenameItem = jsonSchemaModel('RenameItem', {
  type: 'object',
  properties: { id: { type: 'integer' }, title: { type: 'string' } },
  required: ['id', 'title'],
  additionalProperties: false,
})

async function build(mode: 'direct' | 'inject'): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumTcp, { port: 0, mode })
  app.trivium.endpoint('items.get', { method: 'GET', url: '/items/:id', request: GetItem }, (r) => r)
  app.trivium.endpoint('items.list', { method: 'GET', url: '/items', request: ListItems }, (r) => r)
  app.trivium.endpoint('items.create', { method: 'POST', url: '/items', request: CreateItem }, (r) => r)
  app.trivium.endpoint('items.rename', { method: 'PUT', url: '/items/:id', request: RenameItem }, (r) => r)
  app.trivium.endpoint('health', { method: 'GET', url: '/health' }, () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, port: app.triviumTcp.address()?.port as number }
}

/** A client connected to a direct-mode server and one to an inject-mode server, closed at the end. */
async function bothModes(t: Test): Promise<{ d: TcpClient; i: TcpClient }> {
  const direct = await build('direct')
  const inject = await build('inject')
  const d = await TcpClient.open(direct.port)
  const i = await TcpClient.open(inject.port)
  t.teardown(async () => {
    d.socket.destroy()
    i.socket.destroy()
    await direct.app.close()
    await inject.app.close()
  })
  return { d, i }
}

function frame(id: number, endpoint: string, body: Uint8Array | string, format = 'json'): Uint8Array {
  const meta = encodeMetadata({ format })
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  const payload = new Uint8Array(meta.length + bytes.length)
  payload.set(meta)
  payload.set(bytes, meta.length)
  return encodeTcpFrame({ type: FrameType.REQUEST, requestId: id, endpoint, payload })
}

const invalid = (message: string) => ({ statusCode: 400, code: 'TRV_VALIDATION', message })
const invalidUtf8 = new Uint8Array([...new TextEncoder().encode('{"title":"'), 0xff, 0xfe, 0x22, 0x7d])

const cases: Array<{
  name: string
  endpoint: string
  body: Uint8Array | string
  format?: string
  expect: object
}> = [
  {
    name: 'a string id where the model says integer (path)',
    endpoint: 'items.get',
    body: '{"id":"1"}',
    expect: invalid('Invalid GetItem: id must be integer'),
  },
  {
    name: 'a string where the model says boolean (query)',
    endpoint: 'items.list',
    body: '{"done":"true"}',
    expect: invalid('Invalid ListItems: done must be boolean'),
  },
  {
    name: 'a string id in a PUT with a path parameter',
    endpoint: 'items.rename',
    body: '{"id":"7","title":"x"}',
    expect: invalid('Invalid RenameItem: id must be integer'),
  },
  {
    name: 'invalid UTF-8 in a JSON body',
    endpoint: 'items.create',
    body: invalidUtf8,
    expect: invalid('Payload is not valid UTF-8'),
  },
  {
    name: 'invalid UTF-8 in a JSON query model',
    endpoint: 'items.list',
    body: new Uint8Array([0x7b, 0x22, 0xc3, 0x22, 0x3a, 0x31, 0x7d]),
    expect: invalid('Payload is not valid UTF-8'),
  },
  {
    name: 'not JSON',
    endpoint: 'items.create',
    body: '{"title":',
    expect: invalid('Request body is not valid JSON'),
  },
  {
    name: 'binary to an endpoint without a binary request format',
    endpoint: 'items.get',
    body: new Uint8Array([1, 2, 3]),
    format: 'binary',
    expect: { statusCode: 415, code: 'TRV_UNSUPPORTED_MEDIA_TYPE' },
  },
]

t.test('inject mode refuses what direct mode refuses, with the same error body', async (t) => {
  const { d, i } = await bothModes(t)
  let id = 0
  for (const c of cases) {
    id++
    d.write(frame(id, c.endpoint, c.body, c.format))
    i.write(frame(id, c.endpoint, c.body, c.format))
    const fromDirect = await d.reply(id)
    const fromInject = await i.reply(id)
    t.equal(fromInject?.type, FrameType.ERROR, `${c.name}: ERROR in inject mode`)
    const injectBody = dec(fromInject?.payload as Uint8Array)
    const directBody = dec(fromDirect?.payload as Uint8Array)
    t.match(injectBody, c.expect, `${c.name}: the frame rules' message`)
    delete injectBody.requestId
    delete directBody.requestId
    t.same(injectBody, directBody, `${c.name}: same error body as direct mode`)
  }
})

t.test('valid payloads: decoded model → HTTP request, or the original bytes', async (t) => {
  const { d, i } = await bothModes(t)
  const ok: Array<[string, string, unknown]> = [
    ['items.get', '{"id":12}', { id: 12 }],
    ['items.list', '{"done":false,"tag":["a","b c"]}', { done: false, tag: ['a', 'b c'] }],
    ['items.list', '{}', {}],
    ['items.list', '', {}], // zero bytes: the empty model (PROTOCOL.md "Decoding rules")
    ['items.create', '{"title":"é \\u00e9 ✓"}', { title: 'é é ✓' }],
    ['items.rename', '{"id":3,"title":"renamed"}', { id: 3, title: 'renamed' }],
    ['health', '', { ok: true }],
    ['health', '{}', { ok: true }],
  ]
  let id = 100
  for (const [endpoint, body, expected] of ok) {
    id++
    d.write(frame(id, endpoint, body))
    i.write(frame(id, endpoint, body))
    const fromDirect = await d.reply(id)
    const fromInject = await i.reply(id)
    t.equal(fromInject?.type, FrameType.RESPONSE, `${endpoint} ${body}: RESPONSE`)
    t.same(dec(fromInject?.payload as Uint8Array), expected, `${endpoint} ${body}`)
    t.same(dec(fromInject?.payload as Uint8Array), dec(fromDirect?.payload as Uint8Array), 'same as direct')
  }
  // An empty payload to a model with only optional fields: whatever core's frame rule decides (issue 16
  // item 1 makes it the empty model), inject mode answers as direct mode does.
  id++
  d.write(frame(id, 'items.list', ''))
  i.write(frame(id, 'items.list', ''))
  const fromDirect = await d.reply(id)
  const fromInject = await i.reply(id)
  t.equal(fromInject?.type, fromDirect?.type, 'empty payload: same frame type as direct')
  const a = dec(fromInject?.payload as Uint8Array)
  const b = dec(fromDirect?.payload as Uint8Array)
  delete a.requestId
  delete b.requestId
  t.same(a, b, 'empty payload: same answer as direct')
})
