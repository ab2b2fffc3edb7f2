// Issue 41 (hostile input): a call asking for a binary answer the response model has no form in is 406
// `Endpoint <name> has no binary response format` (PROTOCOL.md "Errors"). The document lists that 406
// exactly where core's HTTP route answers it: a unary endpoint whose response model is JSON-only, in an
// app whose binary format is registered. Each case is checked against the route's own answer.
import trivium, { jsonSchemaModel, type Model, type WireFormat } from '@trivium/core'
import openapi, { buildOpenApi } from '@trivium/openapi'
import Fastify from 'fastify'
import t from 'tap'
import { problemsOf } from './helpers.js'

const BINARY = 'application/x-platform-binary'
const Report = jsonSchemaModel('Report', { type: 'object', properties: { total: { type: 'integer' } } })

/** A binary format like @trivium/codec's, and a model with a binary form (as its generated classes have). */
const binary: WireFormat = {
  name: 'binary',
  contentType: BINARY,
  decode: (model, bytes) => (model as Model).decode!(bytes),
  encode: () => new Uint8Array([1]),
}
const withBinary = <T>(m: Model<T>): Model<T> => ({
  ...m,
  decode: () => ({}) as T,
  encode: () => new Uint8Array([1]),
})

async function reportsApp(options: { binaryFormat: boolean }) {
  const fastify = Fastify()
  await fastify.register(trivium)
  if (options.binaryFormat) fastify.trivium.addFormat(binary)
  await fastify.register(openapi, { info: { title: 'Reports', version: '1.0.0' } })
  const rules = { method: 'GET', rateLimit: false } as const
  fastify.trivium.endpoint('reports.json', { ...rules, url: '/json', response: Report }, () => ({ total: 1 }))
  fastify.trivium.endpoint(
    'reports.binary',
    { ...rules, url: '/binary', response: withBinary(Report) },
    () => ({ total: 1 }),
  )
  fastify.trivium.stream(
    'reports.stream',
    { ...rules, url: '/stream', response: Report },
    async function* () {
      yield { total: 1 }
    },
  )
  await fastify.ready()
  return fastify
}

const UNARY_ERRORS = ['400', '404', '500', '503', '504']

t.test('406 is listed for a JSON-only response model, as the route answers it', async (t) => {
  const fastify = await reportsApp({ binaryFormat: true })
  t.teardown(() => fastify.close())
  const document = fastify.openapi()
  const responses = (url: string) => document.paths[url]?.get?.responses ?? {}
  t.same(Object.keys(responses('/json')), ['200', '400', '404', '406', '500', '503', '504'])
  t.same(responses('/json')['406'], { $ref: '#/components/responses/NotAcceptable' })
  t.same(document.components.responses.NotAcceptable, {
    description:
      'UnsupportedMediaTypeException (TRV_UNSUPPORTED_MEDIA_TYPE), status 406: `Accept` names application/x-platform-binary and not JSON, and the response model has no binary form; message `Endpoint <name> has no binary response format`',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
  })
  // A binary form: answered in it. A stream: its answer is Server-Sent Events whatever the Accept.
  t.same(Object.keys(responses('/binary')), ['200', ...UNARY_ERRORS])
  t.same(Object.keys(responses('/stream')), ['200', ...UNARY_ERRORS])
  t.same(await problemsOf(document), [])

  const refused = await fastify.inject({ method: 'GET', url: '/json', headers: { accept: BINARY } })
  t.equal(refused.statusCode, 406)
  t.same(refused.json(), {
    statusCode: 406,
    code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
    error: 'UnsupportedMediaTypeException',
    message: 'Endpoint reports.json has no binary response format',
    requestId: refused.json().requestId,
  })
  const either = await fastify.inject({
    method: 'GET',
    url: '/json',
    headers: { accept: `${BINARY}, application/json` },
  })
  t.same([either.statusCode, either.body], [200, '{"total":1}'], 'JSON named too: answered in JSON')
  const inBinary = await fastify.inject({ method: 'GET', url: '/binary', headers: { accept: BINARY } })
  t.same([inBinary.statusCode, inBinary.headers['content-type']], [200, BINARY])
  const stream = await fastify.inject({ method: 'GET', url: '/stream', headers: { accept: BINARY } })
  t.same([stream.statusCode, stream.headers['content-type']], [200, 'text/event-stream; charset=utf-8'])
})

t.test('no binary format registered: no 406, as the route answers JSON', async (t) => {
  const fastify = await reportsApp({ binaryFormat: false })
  t.teardown(() => fastify.close())
  const document = fastify.openapi()
  t.same(Object.keys(document.paths['/json']?.get?.responses ?? {}), ['200', ...UNARY_ERRORS])
  t.equal(document.components.responses.NotAcceptable, undefined)
  const res = await fastify.inject({ method: 'GET', url: '/json', headers: { accept: BINARY } })
  t.same([res.statusCode, res.body], [200, '{"total":1}'])
})

t.test('a named route is the app own Fastify route: it never answers 406 over HTTP', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  t.teardown(() => fastify.close())
  fastify.get(
    '/named',
    {
      schema: { response: { 200: { type: 'object', properties: { total: { type: 'integer' } } } } },
      config: { triviumRoute: { name: 'reports.named', auth: 'public', rateLimit: false } },
    },
    async () => ({ total: 1 }),
  )
  // Not ready(): no route guard is registered here (named-route.test.ts).
  const document = buildOpenApi(
    fastify.trivium.registry,
    { title: 'Reports', version: '1.0.0' },
    { auth: false },
  )
  t.same(Object.keys(document.paths['/named']?.get?.responses ?? {}), ['200', ...UNARY_ERRORS])
})
