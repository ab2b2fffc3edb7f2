// Compile-time checks of contracts (run by `pnpm typecheck`, tsconfig.test.json): a server that
// implements a contract needs every handler with the contract's types, and a client created with it
// calls only its endpoints, with their request and response types. TypeBox, Zod 4 and a Trivium model
// side by side.
import { createClient } from '@trivium/client/node'
import { defineContract } from '@trivium/contract'
import { jsonSchemaModel, type Trivium } from '@trivium/core'
import { Type } from 'typebox'
import { z } from 'zod'

const CreateOrder = Type.Object({ item: Type.String(), quantity: Type.Integer({ minimum: 1 }) })
const Order = Type.Object({ id: Type.Integer(), item: Type.String(), quantity: Type.Integer() })
const Note = z.object({ text: z.string(), at: z.string().transform((s) => new Date(s)) })
const Tag = jsonSchemaModel<{ tag: string }>('Tag', {
  type: 'object',
  properties: { tag: { type: 'string' } },
})

const contract = defineContract({
  'orders.create': { method: 'POST', url: '/orders', request: CreateOrder, response: Order, status: 201 },
  'orders.watch': { method: 'GET', url: '/orders/watch', response: Order, streaming: true },
  'notes.add': { method: 'POST', url: '/notes', request: Note, response: Note },
  'tags.upload': { method: 'POST', url: '/tags', request: Tag, response: Tag, requestStream: true },
  'tags.echo': {
    method: 'POST',
    url: '/tags/echo',
    request: Tag,
    response: Tag,
    requestStream: true,
    streaming: true,
  },
  health: { method: 'GET', url: '/health' },
})

declare const trivium: Trivium

const handlers = {
  'orders.create': (req: { item: string; quantity: number }) => ({ id: 1, ...req }),
  'orders.watch': async function* () {
    yield { id: 1, item: 'a', quantity: 1 }
  },
  // A Standard Schema's output (the transform ran) in, its input out.
  'notes.add': (req: { text: string; at: Date }) => ({ text: req.text, at: req.at.toISOString() }),
  'tags.upload': async (requests: AsyncIterable<{ tag: string }>) => {
    for await (const r of requests) return r
    return { tag: '' }
  },
  'tags.echo': async function* (requests: AsyncIterable<{ tag: string }>) {
    yield* requests
  },
  health: () => ({ ok: true }),
}
export const definitions = trivium.implement(contract, handlers, { 'orders.create': { timeoutMs: 1000 } })
export const created: string = definitions['orders.create'].name

// @ts-expect-error a handler is missing (health)
trivium.implement(contract, {
  'orders.create': handlers['orders.create'],
  'orders.watch': handlers['orders.watch'],
  'notes.add': handlers['notes.add'],
  'tags.upload': handlers['tags.upload'],
  'tags.echo': handlers['tags.echo'],
})
trivium.implement(contract, {
  ...handlers,
  // @ts-expect-error quantity must be a number (TypeBox Integer)
  'orders.create': (req) => ({ id: 1, item: req.item, quantity: String(req.quantity) }),
})
trivium.implement(contract, {
  ...handlers,
  // @ts-expect-error the request of orders.create has no `price`
  'orders.create': (req) => ({ id: req.price, item: req.item, quantity: req.quantity }),
})
trivium.implement(contract, {
  ...handlers,
  // @ts-expect-error a streaming endpoint's handler returns an AsyncIterable
  'orders.watch': () => ({ id: 1, item: 'a', quantity: 1 }),
})
trivium.implement(contract, {
  ...handlers,
  // @ts-expect-error notes.add answers its input type: `at` is a string there (Zod's input), not a Date
  'notes.add': (req) => ({ text: req.text, at: req.at }),
})
trivium.implement(contract, {
  ...handlers,
  // @ts-expect-error a client stream's handler takes the stream of requests, not one
  'tags.upload': (req: { tag: string }) => req,
})
trivium.implement(contract, handlers, {
  // @ts-expect-error settings name only endpoints of the contract
  'orders.delete': { timeoutMs: 5 },
})

export async function clientSide(): Promise<void> {
  for (const transport of ['http', 'websocket', 'tcp'] as const) {
    const client =
      transport === 'tcp'
        ? createClient({ transport, port: 1, contract })
        : createClient({ transport, url: `${transport === 'http' ? 'http' : 'ws'}://x`, contract })
    const order: { id: number; item: string; quantity: number } = await client.call('orders.create', {
      item: 'tea',
      quantity: 2,
    })
    // @ts-expect-error quantity must be a number
    await client.call('orders.create', { item: 'tea', quantity: '2' })
    // @ts-expect-error the request is required (the endpoint has a request schema)
    await client.call('orders.create')
    // @ts-expect-error not an endpoint of the contract
    await client.call('orders.delete', {})
    // @ts-expect-error a streaming endpoint is called with stream(), not call()
    await client.call('orders.watch')
    // @ts-expect-error the response has no `price`
    const price: number = (await client.call('orders.create', { item: 'a', quantity: 1 })).price
    for await (const item of client.stream('orders.watch')) {
      const id: number = item.id
      // @ts-expect-error item is an Order, its item a string
      const wrong: number = item.item
      void [id, wrong]
    }
    // A Standard Schema: the client sends its input and gets its output.
    const note = await client.call('notes.add', { text: 'x', at: '2026-01-01T00:00:00Z' })
    const when: Date = note.at
    // @ts-expect-error the client sends Zod's input: `at` is a string
    await client.call('notes.add', { text: 'x', at: new Date() })
    const upload = client.clientStream('tags.upload')
    await upload.send({ tag: 'a' })
    // @ts-expect-error items are Tags
    await upload.send({ name: 'a' })
    const tag: string = (await upload.response).tag
    const echo = client.bidiStream('tags.echo')
    for await (const t of echo) void t.tag
    // @ts-expect-error tags.upload takes a stream of requests: clientStream(), not call()
    await client.call('tags.upload', { tag: 'a' })
    const health: unknown = await client.call('health')
    void [order, price, when, tag, health]
  }
}
