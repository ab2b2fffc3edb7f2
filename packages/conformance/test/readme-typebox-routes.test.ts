// Runs the root README's "From TypeBox routes to WebSocket and TCP" block as written (issue 41 item 4): a
// Fastify route with TypeBox schemas, named in config.triviumRoute, answers over HTTP as a Fastify route
// always did and by its name over WebSocket and TCP.
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient, type EndpointSpec, ValidationException } from '@trivium/client/node'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { testedSection } from '../../../scripts/test/readme-blocks.js'

const [block] = testedSection('README.md', 'packages/conformance/test/readme-typebox-routes.test.ts')
const file = join(import.meta.dirname, `.readme-typebox-routes-${process.pid}.ts`)
writeFileSync(file, block!.code)
const { buildApp } = (await import(file).finally(() => rmSync(file, { force: true }))) as {
  buildApp: (secret: string, tcpPort: number) => Promise<FastifyInstance>
}
const app = await buildApp('readme-secret-readme-secret-readme-secret-0123', 0)
const base = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => app.close())

const json = { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v }
const endpoints: Record<string, EndpointSpec> = {
  'orders.create': {
    name: 'orders.create',
    method: 'POST',
    url: '/orders',
    request: json,
    response: json,
    streaming: false,
  },
}

t.test('HTTP: the route answers as it always did', async (t) => {
  const post = (body: unknown) =>
    fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
  const created = await post({ item: 'tea', quantity: 2 })
  t.equal(created.status, 201)
  t.same(await created.json(), { id: 1, item: 'tea', quantity: 2 })
  const refused = await post({ item: 'tea', quantity: 0 })
  t.equal(refused.status, 400)
  t.match(await refused.json(), { message: 'body/quantity must be >= 1' }, "Fastify's own answer")
})

const clients = {
  websocket: () =>
    createClient({ transport: 'websocket', url: `${base.replace('http', 'ws')}/ws`, endpoints }),
  tcp: () => createClient({ transport: 'tcp', port: app.triviumTcp.address()?.port ?? 0, endpoints }),
}
for (const [transport, open] of Object.entries(clients)) {
  t.test(`${transport}: the route is called by its name, through its schema`, async (t) => {
    const client = open()
    t.teardown(() => client.close())
    t.same(await client.call('orders.create', { item: 'tea', quantity: 2 }), {
      id: 1,
      item: 'tea',
      quantity: 2,
    })
    const refused = await client.call('orders.create', { item: 'tea', quantity: 0 }).catch((e: unknown) => e)
    t.type(refused, ValidationException)
    t.match(refused, { code: 'TRV_VALIDATION', details: [{ field: 'quantity' }] })
  })
}
