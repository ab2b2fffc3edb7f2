// A Fastify 5 service that adopts Trivium as a user would: written against the published packages
// (installed from their tarballs), type-checked with the strictest settings, then run. It prints one
// JSON report; test/adoption.test.ts asserts it.
import { setTimeout as delay } from 'node:timers/promises'
import { createClient, type EndpointSpec, type TriviumClient } from '@trivium/client/node'
import trivium, { jsonSchemaModel } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify from 'fastify'

interface Greeting {
  name: string
}
interface Reply {
  message: string
  via: string
}
const Greeting = jsonSchemaModel<Greeting>('Greeting', {
  type: 'object',
  properties: { name: { type: 'string', minLength: 1 } },
  required: ['name'],
  additionalProperties: false,
})
const Reply = jsonSchemaModel<Reply>('Reply', {
  type: 'object',
  properties: { message: { type: 'string' }, via: { type: 'string' } },
  required: ['message', 'via'],
})
const Empty = jsonSchemaModel<Record<string, never>>('Empty', { type: 'object' })

const app = Fastify()

// The shutdown below starts once every call it is about has reached its handler.
let handlersRunning = 0
let allStarted = () => {}
const handlerStarted = () => {
  handlersRunning += 1
  if (handlersRunning === 5) allStarted()
}

// The service as it was before Trivium: a plain Fastify route.
app.get('/legacy/hello', async () => ({ legacy: true }))

await app.register(trivium)
await app.register(triviumWebSocket)
await app.register(triviumTcp)

app.trivium.endpoint(
  'hello',
  { method: 'POST', url: '/hello', request: Greeting, response: Reply },
  async (req, call) => ({
    message: `hello ${req.name}`,
    via: call.protocol,
  }),
)
app.trivium.endpoint(
  'slow',
  { method: 'POST', url: '/slow', request: Greeting, response: Reply },
  async (req, call) => {
    handlerStarted()
    await delay(300)
    return { message: `slept for ${req.name}`, via: call.protocol }
  },
)
// Never answers by itself: only the shutdown ends it (its signal aborts).
app.trivium.endpoint(
  'hang',
  { method: 'POST', url: '/hang', request: Empty, response: Reply },
  async (_req, call) => {
    handlerStarted()
    await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }))
    return { message: 'aborted', via: call.protocol }
  },
)

// An endpoint in an encapsulated context under a prefix, with the context's own hook.
await app.register(
  async (v1) => {
    v1.addHook('onRequest', async (_request, reply) => {
      reply.header('x-api-version', '1')
    })
    v1.trivium.endpoint(
      'v1.hello',
      { method: 'GET', url: '/hello', response: Reply },
      async (_req, call) => ({
        message: 'hello from v1',
        via: call.protocol,
      }),
    )
  },
  { prefix: '/v1' },
)

await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('no TCP address for HTTP')
const base = `http://127.0.0.1:${address.port}`
const tcpAddress = app.triviumTcp.address()
if (tcpAddress === null || typeof tcpAddress === 'string') throw new Error('no TCP address')

const endpoints = {
  hello: {
    name: 'hello',
    method: 'POST',
    url: '/hello',
    request: Greeting,
    response: Reply,
    streaming: false,
  },
  slow: { name: 'slow', method: 'POST', url: '/slow', request: Greeting, response: Reply, streaming: false },
  hang: { name: 'hang', method: 'POST', url: '/hang', request: Empty, response: Reply, streaming: false },
  'v1.hello': {
    name: 'v1.hello',
    method: 'GET',
    url: '/v1/hello',
    request: Empty,
    response: Reply,
    streaming: false,
  },
} satisfies Record<string, EndpointSpec>

const clients: Record<'http' | 'websocket' | 'tcp', TriviumClient> = {
  http: createClient({ transport: 'http', url: base, endpoints }),
  websocket: createClient({ transport: 'websocket', url: `ws://127.0.0.1:${address.port}/ws`, endpoints }),
  tcp: createClient({ transport: 'tcp', host: '127.0.0.1', port: tcpAddress.port, endpoints }),
}

async function settle(promise: Promise<unknown>): Promise<unknown> {
  try {
    return { value: await promise }
  } catch (err) {
    const e = err as { name?: string; message?: string; statusCode?: number }
    return { error: { name: e.name, message: e.message, statusCode: e.statusCode } }
  }
}

const legacy = await fetch(`${base}/legacy/hello`)
const prefixed = await fetch(`${base}/v1/hello`)
const report: Record<string, unknown> = {
  legacy: { status: legacy.status, body: await legacy.json() },
  prefixed: {
    status: prefixed.status,
    version: prefixed.headers.get('x-api-version'),
    body: prefixed.status === 200 ? await prefixed.json() : await prefixed.text(),
  },
  unprefixed: { status: (await fetch(`${base}/hello`)).status },
  calls: {
    http: await settle(clients.http.call('hello', { name: 'http' })),
    websocket: await settle(clients.websocket.call('hello', { name: 'websocket' })),
    tcp: await settle(clients.tcp.call('hello', { name: 'tcp' })),
    prefixedOverWebSocket: await settle(clients.websocket.call('v1.hello', {})),
  },
}

// Shutdown with calls in flight on every transport, default options.
const inFlight = {
  slowHttp: settle(clients.http.call('slow', { name: 'http' })),
  slowWebSocket: settle(clients.websocket.call('slow', { name: 'websocket' })),
  slowTcp: settle(clients.tcp.call('slow', { name: 'tcp' })),
  hangWebSocket: settle(clients.websocket.call('hang', {}, { timeoutMs: 15_000 })),
  hangTcp: settle(clients.tcp.call('hang', {}, { timeoutMs: 15_000 })),
}
await new Promise<void>((resolve) => {
  allStarted = resolve
})
const started = performance.now()
const closed = await settle(app.close().then(() => 'closed'))
report.shutdown = {
  closed,
  closeMs: Math.round(performance.now() - started),
  pluginTimeout: app.initialConfig.pluginTimeout,
  calls: Object.fromEntries(await Promise.all(Object.entries(inFlight).map(async ([k, p]) => [k, await p]))),
}
await Promise.all(Object.values(clients).map((c) => c.close()))
report.keptAlive = await keptAliveAfterClose()
console.log(JSON.stringify(report))

/**
 * What still keeps the process alive once the app and the clients are closed: nothing, once the sockets have
 * finished closing (a loaded machine takes a few turns). Read by condition, up to 10 s, so that a forgotten
 * timer or socket shows by name (a short ref'd timer would also end before a kill-after-N-seconds could tell).
 */
async function keptAliveAfterClose(): Promise<string[]> {
  const until = performance.now() + 10_000
  for (;;) {
    const left = process.getActiveResourcesInfo()
    if (left.length === 0 || performance.now() > until) return left
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
