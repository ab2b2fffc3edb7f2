// Issue 41: models from the schemas people write — names, each library's messages in the one error
// shape, and the refusals at registration (HTTP here; every transport in conformance/schema-models).
import trivium, { schemaModel } from '@trivium/core'
import { toStandardJsonSchema } from '@valibot/to-json-schema'
import { type } from 'arktype'
import Fastify from 'fastify'
import t from 'tap'
import Type from 'typebox'
import * as v from 'valibot'
import * as z from 'zod'

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  t.teardown(() => fastify.close())
  return fastify
}
const post = (url: string) => ({ method: 'POST' as const, url })

t.test(
  'each library: the first issue in the message, every issue in details, paths in dot form',
  async (t) => {
    const fastify = await app()
    fastify.trivium.endpoint(
      'v.add',
      { ...post('/v'), request: v.object({ n: v.pipe(v.number(), v.integer()) }) },
      (r) => r,
    )
    fastify.trivium.endpoint(
      'a.add',
      { ...post('/a'), request: type({ n: 'number.integer', tags: 'string[]' }) },
      (r) => r,
    )
    const Named = z.object({ deep: z.object({ list: z.array(z.int()) }) }).meta({ title: 'Deep' })
    fastify.trivium.endpoint('z.deep', { ...post('/z'), request: Named }, (r) => r)
    fastify.trivium.endpoint(
      'z.named',
      { ...post('/zn'), request: schemaModel(z.object({ n: z.int() }), { name: 'N' }) },
      (r) => r,
    )
    const cases: Array<[string, unknown, string, Array<{ field: string; message: string }>]> = [
      [
        '/v',
        { n: 1.5 },
        'Invalid v.add request: n Invalid integer: Received 1.5',
        [{ field: 'n', message: 'Invalid integer: Received 1.5' }],
      ],
      [
        '/a',
        { n: 1.5, tags: ['x', 2] },
        'Invalid a.add request: n must be an integer (was 1.5)',
        [
          { field: 'n', message: 'must be an integer (was 1.5)' },
          { field: 'tags.1', message: 'must be a string (was a number)' },
        ],
      ],
      [
        '/z',
        { deep: { list: [1, 'x'] } },
        'Invalid Deep: deep.list.1 Invalid input: expected number, received string',
        [{ field: 'deep.list.1', message: 'Invalid input: expected number, received string' }],
      ],
      [
        '/zn',
        { n: 'x' },
        'Invalid N: n Invalid input: expected number, received string',
        [{ field: 'n', message: 'Invalid input: expected number, received string' }],
      ],
    ]
    for (const [url, payload, message, details] of cases) {
      const res = await fastify.inject({ method: 'POST', url, payload: payload as object })
      t.equal(res.statusCode, 400, url)
      t.match(res.json(), { code: 'TRV_VALIDATION', message, details }, url)
    }
  },
)

t.test(
  'GET: the JSON Schema a library offers coerces query parameters (Valibot through toStandardJsonSchema)',
  async (t) => {
    const fastify = await app()
    const Page = toStandardJsonSchema(v.object({ limit: v.number(), q: v.optional(v.string()) }))
    fastify.trivium.endpoint('page', { method: 'GET', url: '/page', request: Page }, (r) => ({
      twice: r.limit * 2,
    }))
    fastify.trivium.endpoint(
      'tb',
      { method: 'GET', url: '/tb/:id', request: Type.Object({ id: Type.Integer() }) },
      (r) => r,
    )
    t.same((await fastify.inject('/page?limit=4')).json(), { twice: 8 })
    t.same((await fastify.inject('/tb/7')).json(), { id: 7 })
  },
)

t.test('refused at registration, naming the endpoint and the reason', async (t) => {
  const fastify = await app()
  const refusals: Array<[unknown, string]> = [
    [
      { '~standard': { version: 2, vendor: 'futurelib', validate: () => ({ value: 1 }) } },
      'request its Standard Schema version is 2 (from futurelib); Trivium reads version 1',
    ],
    [
      { '~standard': { version: 1, vendor: 'broken' } },
      'request its ~standard.validate (from broken) is not a function',
    ],
    [
      'a string',
      'request must be a Model, a Standard Schema (Zod, Valibot, ArkType), a TypeBox schema or a JSON Schema',
    ],
    [{ type: 'no-such-type' }, 'request is a JSON Schema that does not compile: '],
  ]
  for (const [request, message] of refusals) {
    t.throws(
      () => fastify.trivium.endpoint('bad', { ...post('/bad'), request: request as object }, () => ({})),
      {
        name: 'RegistrationError',
        message: new RegExp(`^@trivium/core: endpoint "bad": ${literal(message)}`),
      },
      message,
    )
  }
})

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
