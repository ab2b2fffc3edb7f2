// Issue 41: `createClient({ contract, deriveBinary: deriveBinaryForm })` gives a contract's TypeBox (and
// Standard JSON Schema) models the binary form the server derives with @trivium/codec from the same JSON
// Schema: the client sends and reads binary, the same bytes the server's model encodes, over TCP and
// WebSocket. A model without a derivable layout stays JSON; the option without a contract is refused.
import { createClient, type WebSocketConstructor } from '@trivium/client/node'
import triviumCodec from '@trivium/codec'
import { deriveBinaryForm } from '@trivium/codec/runtime'
import { defineContract } from '@trivium/contract'
import triviumCore from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import { decodeMetadata, decodeWsFrame, FrameType } from '@trivium/wire'
import Fastify from 'fastify'
import t from 'tap'
import { Type } from 'typebox'
import WebSocket from 'ws'
import { z } from 'zod'

const int32 = { minimum: -2147483648, maximum: 2147483647 }
const Order = Type.Object({
  shop: Type.String(),
  quantity: Type.Integer(int32),
  tags: Type.Array(Type.String()),
  note: Type.Optional(Type.String()),
})
const Total = Type.Object({ shop: Type.String(), total: Type.Integer(int32) })
const ZodOrder = z.object({ shop: z.string(), quantity: z.int32() })
/** No layout: the binary format has no "any value". */
const Loose = Type.Object({ value: Type.Unknown() })

const contract = defineContract({
  'orders.total': { method: 'POST', url: '/orders/total', request: Order, response: Total },
  'orders.zod': { method: 'POST', url: '/orders/zod', request: ZodOrder, response: Total },
  'loose.echo': { method: 'POST', url: '/loose', request: Loose, response: Loose },
})

const app = Fastify()
await app.register(triviumCore)
await app.register(triviumCodec)
await app.register(triviumWebSocket)
await app.register(triviumTcp, { port: 0 })
app.trivium.implement(contract, {
  'orders.total': (o) => ({ shop: o.shop, total: o.quantity * 2 + o.tags.length }),
  'orders.zod': (o) => ({ shop: o.shop, total: o.quantity }),
  'loose.echo': (l) => l,
})
await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => app.close())
const port = (app.server.address() as { port: number }).port
const tcpPort = app.triviumTcp.address()?.port as number

const order = { shop: 'corner', quantity: 20, tags: ['tea', 'ö'], note: 'x' }

t.test('the derived models encode the bytes the server decodes', async (t) => {
  const client = createClient({ transport: 'tcp', port: tcpPort, contract, deriveBinary: deriveBinaryForm })
  t.teardown(() => client.close())
  const server = app.trivium.registry.get('orders.total')
  const serverBytes = server?.request.encode?.(order)
  t.ok(serverBytes, 'the server derived a binary form')
  const { contractEndpoints } = await import('@trivium/client')
  const table = contractEndpoints(contract, deriveBinaryForm)
  t.same(table['orders.total']?.request.encode?.(order), serverBytes)
  t.same(
    table['orders.zod']?.request.encode?.({ shop: 'a', quantity: 1 }),
    app.trivium.registry.get('orders.zod')?.request.encode?.({ shop: 'a', quantity: 1 }),
    'a Standard Schema offering ~standard.jsonSchema (Zod 4) too',
  )
  t.equal(table['loose.echo']?.request.encode, undefined, 'no layout: JSON')
  t.equal(
    contractEndpoints(contract)['orders.total']?.request.encode,
    undefined,
    'without deriveBinary: JSON',
  )
})

t.test('TCP: binary calls both ways, and JSON for a model without a layout', async (t) => {
  const client = createClient({
    transport: 'tcp',
    port: tcpPort,
    contract,
    deriveBinary: deriveBinaryForm,
    format: 'binary',
  })
  t.teardown(() => client.close())
  t.same(await client.call('orders.total', order), { shop: 'corner', total: 42 })
  t.same(await client.call('orders.zod', { shop: 'z', quantity: 7 }), { shop: 'z', total: 7 })
  t.same(await client.call('loose.echo', { value: [1, { a: 2 }] }), { value: [1, { a: 2 }] })
  // A value the layout cannot hold is refused before anything is sent, as a generated model's encode does.
  await t.rejects(client.call('orders.total', { ...order, quantity: 2 ** 31 }), {
    name: 'EncodeError',
    code: 'TRV_ENCODE',
    message: 'expected int32, got number 2147483648',
  })
  t.same(await client.call('orders.total', { ...order, quantity: 1 }), { shop: 'corner', total: 4 })
})

t.test('WebSocket: the REQUEST payload is the binary the server model encodes', async (t) => {
  const sent: Uint8Array[] = []
  class Recording extends WebSocket {
    override send(data: Uint8Array, ...rest: never[]): void {
      const frame = decodeWsFrame(new Uint8Array(data))
      if (frame.type === FrameType.REQUEST) sent.push(decodeMetadata(frame.payload).rest)
      super.send(data, ...rest)
    }
  }
  const client = createClient({
    transport: 'websocket',
    url: `ws://127.0.0.1:${port}/ws`,
    contract,
    deriveBinary: deriveBinaryForm,
    format: 'binary',
    WebSocket: Recording as unknown as WebSocketConstructor,
  })
  t.teardown(() => client.close())
  t.same(await client.call('orders.total', order), { shop: 'corner', total: 42 })
  t.same(
    Buffer.from(sent[0] as Uint8Array),
    Buffer.from(app.trivium.registry.get('orders.total')?.request.encode?.(order) as Uint8Array),
  )
  t.equal(sent[0]?.[0], 1, 'the binary envelope (version byte 01), not JSON')
})

t.test('deriveBinary without a contract, or not a function, is refused', async (t) => {
  t.throws(() => createClient({ transport: 'tcp', port: tcpPort, deriveBinary: deriveBinaryForm }), {
    message: /deriveBinary derives the binary forms of a contract: give contract too/,
  })
  t.throws(
    () =>
      createClient({
        transport: 'tcp',
        port: tcpPort,
        contract,
        deriveBinary: 'yes' as unknown as typeof deriveBinaryForm,
      }),
    { message: /deriveBinary must be @trivium\/codec's deriveBinaryForm \(a function\)/ },
  )
})
