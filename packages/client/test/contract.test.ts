// Contracts at run time (issue 41 item 3): a server that implements a contract and a client created
// with it call each other on every transport, HTTP by the contract's method and URL, WebSocket and TCP
// by name; a refused request is the same ValidationException everywhere; a contract, a handler table
// or a client option that does not fit is refused before anything is registered or sent.
import { createClient, ValidationException } from '@trivium/client/node'
import { defineContract } from '@trivium/contract'
import { triviumCorePlugin } from '@trivium/core'
import { triviumTcpPlugin } from '@trivium/tcp'
import { triviumWebSocketPlugin } from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import { binaryFormat, binModel } from './fixture.js'

interface Item {
  list: string
  title: string
}
interface N {
  n: number
}
const ItemModel = binModel<Item>('Item', {
  type: 'object',
  properties: { list: { type: 'string' }, title: { type: 'string', minLength: 1 } },
  required: ['list', 'title'],
})
const NModel = binModel<N>('N', { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] })

const contract = defineContract({
  'items.add': {
    method: 'POST',
    url: '/lists/:list/items',
    request: ItemModel,
    response: ItemModel,
    status: 201,
  },
  'items.count': { method: 'GET', url: '/items/count', request: NModel, response: NModel, streaming: true },
  'items.sum': { method: 'POST', url: '/items/sum', request: NModel, response: NModel, requestStream: true },
  'items.double': {
    method: 'POST',
    url: '/items/double',
    request: NModel,
    response: NModel,
    requestStream: true,
    streaming: true,
  },
  health: { method: 'GET', url: '/health' },
})

const handlers = {
  'items.add': (item: Item) => ({ list: item.list, title: item.title.toUpperCase() }),
  'items.count': async function* (req: N) {
    for (let n = 1; n <= req.n; n++) yield { n }
  },
  'items.sum': async (requests: AsyncIterable<N>) => {
    let n = 0
    for await (const r of requests) n += r.n
    return { n }
  },
  'items.double': async function* (requests: AsyncIterable<N>) {
    for await (const r of requests) yield { n: r.n * 2 }
  },
  health: () => ({ ok: true }),
}

const app = Fastify()
await app.register(triviumCorePlugin)
app.trivium.addFormat(binaryFormat)
// In a child context with a prefix: implement() registers where it is called, as endpoint() does.
await app.register(
  async (child) => {
    child.trivium.implement(contract, handlers)
  },
  { prefix: '/v1' },
)
await app.register(triviumWebSocketPlugin)
await app.register(triviumTcpPlugin, { port: 0 })
const base = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => app.close())
const tcpPort = app.triviumTcp.address()?.port ?? 0

const clients = {
  http: () => createClient({ transport: 'http', url: `${base}/v1`, contract }),
  'http (json)': () => createClient({ transport: 'http', url: `${base}/v1`, contract, format: 'json' }),
  websocket: () =>
    createClient({ transport: 'websocket', url: `${base.replace('http', 'ws')}/ws`, contract }),
  tcp: () => createClient({ transport: 'tcp', port: tcpPort, contract }),
}

for (const [transport, open] of Object.entries(clients)) {
  t.test(`${transport}: every endpoint of the contract, by its name`, async (t) => {
    const client = open()
    t.teardown(() => client.close())
    t.same(await client.call('items.add', { list: 'inbox', title: 'tea' }), { list: 'inbox', title: 'TEA' })
    const counted: number[] = []
    for await (const item of client.stream('items.count', { n: 3 })) counted.push(item.n)
    t.same(counted, [1, 2, 3])
    t.same(await client.call('health'), { ok: true })
    const refused = await client.call('items.add', { list: 'inbox', title: '' }).catch((e: unknown) => e)
    t.type(refused, ValidationException)
    t.match(refused, {
      message: 'Invalid Item: title must NOT have fewer than 1 characters',
      code: 'TRV_VALIDATION',
      details: [{ field: 'title', message: 'must NOT have fewer than 1 characters' }],
    })
    if (transport.startsWith('http')) return
    const sum = client.clientStream('items.sum')
    await sum.sendAll([{ n: 1 }, { n: 2 }, { n: 4 }])
    t.same(await sum.response, { n: 7 })
    const double = client.bidiStream('items.double')
    const doubled: number[] = []
    const reading = (async () => {
      for await (const item of double) doubled.push(item.n)
    })()
    await double.sendAll([{ n: 1 }, { n: 5 }])
    await reading
    t.same(doubled, [2, 10])
  })
}

t.test('HTTP: the contract is the route (method, URL with its path field, status)', async (t) => {
  const res = await fetch(`${base}/v1/lists/work/items`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'x' }),
  })
  t.equal(res.status, 201)
  t.same(await res.json(), { list: 'work', title: 'X' })
})

t.test('implement() refuses what does not fit, before registering anything', async (t) => {
  const other = Fastify()
  await other.register(triviumCorePlugin)
  t.teardown(() => other.close())
  const { health: _, ...withoutHealth } = handlers
  const refusals: Array<[string, () => unknown]> = [
    [
      '@trivium/core: implement(): endpoint "health" of the contract has no handler function',
      () => other.trivium.implement(contract, withoutHealth as typeof handlers),
    ],
    [
      '@trivium/core: implement(): handler "items.remove" names no endpoint of the contract',
      () => other.trivium.implement(contract, { ...handlers, 'items.remove': () => ({}) } as typeof handlers),
    ],
    [
      '@trivium/core: implement(): settings "items.remove" names no endpoint of the contract',
      () => other.trivium.implement(contract, handlers, { 'items.remove': {} } as object),
    ],
    [
      '@trivium/core: implement(): handlers must be an object (endpoint name → handler)',
      () => other.trivium.implement(contract, null as unknown as typeof handlers),
    ],
  ]
  for (const [message, attempt] of refusals) {
    t.throws(attempt, { name: 'RegistrationError', code: 'TRV_REGISTRATION', message })
  }
  t.throws(() => other.trivium.implement({ x: { method: 'PATCH', url: '/x' } } as never, {} as never), {
    name: 'ContractError',
    code: 'TRV_CONTRACT',
    message: '@trivium/contract: endpoint "x": method must be one of GET, POST, PUT, DELETE',
  })
  t.same(other.trivium.registry.list(), [], 'nothing was registered')
})

t.test('defineContract() refuses a malformed contract', async (t) => {
  const bad: Array<[unknown, string]> = [
    [null, 'a contract must be an object'],
    [{ a: 1 }, 'endpoint "a" must be an object'],
    [{ a: { method: 'GET', url: 'a' } }, 'endpoint "a": url must be a path starting with /'],
    [
      { a: { method: 'GET', url: '/a', request: 'Item' } },
      'endpoint "a": request must be a schema (a model, a Standard Schema or a JSON Schema)',
    ],
    [{ a: { method: 'GET', url: '/a', streaming: 'yes' } }, 'endpoint "a": streaming must be a boolean'],
  ]
  for (const [value, message] of bad) {
    t.throws(() => defineContract(value as never), {
      code: 'TRV_CONTRACT',
      message: `@trivium/contract: ${message}`,
    })
  }
  t.ok(Object.isFrozen(contract))
})

t.test('the client refuses a name both in endpoints and in the contract', async (t) => {
  t.throws(
    () =>
      createClient({
        transport: 'http',
        url: base,
        contract,
        endpoints: {
          health: {
            name: 'health',
            method: 'GET',
            url: '/h',
            request: NModel,
            response: NModel,
            streaming: false,
          },
        },
      }),
    new TypeError('@trivium/client: endpoint health is both in endpoints and in contract'),
  )
})
