// Issue 41: endpoints whose models are TypeBox, Zod or other Standard Schemas are documented with the
// JSON Schema each offers; a library that offers none gets a note in the document.
import trivium, { type StandardSchemaV1 } from '@trivium/core'
import { buildOpenApi } from '@trivium/openapi'
import Fastify from 'fastify'
import t from 'tap'
import Type from 'typebox'
import * as z from 'zod'
import { problemsOf } from './helpers.js'

const bare: StandardSchemaV1<{ a: string }> = {
  '~standard': { version: 1, vendor: 'bare', validate: (value) => ({ value: value as { a: string } }) },
}

t.test('TypeBox, Zod and a Standard Schema without JSON Schema in one document', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  const Order = Type.Object({ id: Type.Integer(), note: Type.Optional(Type.String()) }, { title: 'Order' })
  app.trivium.endpoint('orders.get', { method: 'GET', url: '/orders/:id', request: Order }, (o) => o)
  const Tag = z.object({ name: z.string().min(2), tags: z.array(z.string()) })
  app.trivium.endpoint('tags.add', { method: 'POST', url: '/tags', request: Tag, response: Tag }, (x) => x)
  app.trivium.endpoint('bare', { method: 'POST', url: '/bare', request: bare }, (x) => x)
  await app.ready()
  const document = buildOpenApi(app.trivium.registry, { title: 'T', version: '1' })
  await app.close()
  t.same(await problemsOf(document), [])
  const schemas = document.components.schemas as Record<string, Record<string, unknown>>
  t.same(schemas.Order, {
    title: 'Order',
    type: 'object',
    required: ['id'],
    properties: { id: { type: 'integer' }, note: { type: 'string' } },
  })
  const zod = Object.entries(schemas).find(([name]) => name.startsWith('tags'))
  t.match(zod?.[1], {
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 2 },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['name', 'tags'],
  })
  const undocumented = Object.entries(schemas).find(([name]) => name.startsWith('bare'))
  t.same(undocumented?.[1], {
    description:
      'Not documented: this bare schema offers no JSON Schema (Standard JSON Schema, `~standard.jsonSchema`); the server validates it on every call.',
  })
})
