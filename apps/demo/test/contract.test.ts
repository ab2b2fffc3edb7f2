// The demo's contract-defined group (src/contract.ts, issue 41 item 4): a client created with the
// contract calls it on every transport, typed by its schemas, beside the generated API; OpenAPI
// documents it like any endpoint.
import { createClient, ValidationException } from '@trivium/client/node'
import t from 'tap'
import { textContract } from '../dist/contract.js'
import { startDemo } from './helpers.js'

const demo = await startDemo(t)
const { app } = demo
await app.listen({ port: 0, host: '127.0.0.1' })
const port = (app.server.address() as { port: number }).port
const tcpPort = app.triviumTcp.address()?.port ?? 0

const clients = {
  http: () => createClient({ transport: 'http', url: `http://127.0.0.1:${port}`, contract: textContract }),
  websocket: () =>
    createClient({ transport: 'websocket', url: `ws://127.0.0.1:${port}/ws`, contract: textContract }),
  tcp: () => createClient({ transport: 'tcp', host: '127.0.0.1', port: tcpPort, contract: textContract }),
}

for (const [transport, open] of Object.entries(clients)) {
  t.test(`${transport}: the contract's endpoints, public, by name`, async (t) => {
    const client = open()
    t.teardown(() => client.close())
    const { slug } = await client.call('text.slug', { text: '  Crème brûlée: 2 spoons! ' })
    t.equal(slug, 'creme-brulee-2-spoons')
    t.same(await client.call('text.stats', { text: 'one  two ✓' }), { characters: 10, words: 3 })
    const refused = await client.call('text.slug', { text: 7 } as never).catch((e: unknown) => e)
    t.type(refused, ValidationException)
    t.match(refused, { message: 'Invalid TextInput: text must be string', code: 'TRV_VALIDATION' })
  })
}

t.test('OpenAPI documents the contract group with the generated API', async (t) => {
  const doc = (await app.inject('/openapi.json')).json() as {
    paths: Record<string, Record<string, { operationId: string; summary?: string }>>
  }
  t.equal(doc.paths['/text/slug']?.post?.operationId, 'text.slug')
  t.equal(doc.paths['/text/stats']?.post?.summary, 'How many characters (code points) and words a text has')
  t.ok(doc.paths['/tasks'], 'the generated API is still there')
})
