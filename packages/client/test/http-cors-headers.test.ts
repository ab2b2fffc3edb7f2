// Issue 40 item 5: with default options the HTTP client sends no header the spec's default CORS does not
// allow (Content-Type, Authorization; Accept is CORS-safelisted), so a page on another origin can call a
// Trivium server with the default CORS. A deadline (`Trivium-Timeout-Ms`) or an idempotency key
// (`Idempotency-Key`) travels only when the caller asks for one; the default deadline is still enforced,
// by the client. WebSocket and TCP (no CORS) keep sending both as frame metadata.
import { createClient, TimeoutException } from '@trivium/client/node'
import { jsonSchemaModel, type TriviumCall, triviumCorePlugin } from '@trivium/core'
import { triviumTcpPlugin } from '@trivium/tcp'
import { triviumWebSocketPlugin } from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'

const anyJson = jsonSchemaModel<Record<string, unknown>>('Any', { type: 'object' })
const spec = (name: string, method: 'GET' | 'POST', url: string) =>
  ({ name, method, url, request: anyJson, response: anyJson, streaming: false }) as const
const endpoints = {
  create: spec('things.create', 'POST', '/things'),
  read: spec('things.read', 'GET', '/things'),
  hang: spec('hang', 'GET', '/hang'),
}

/** What the server saw of a call: its deadline and the idempotency key, from headers or metadata. */
function seen(call: TriviumCall<Record<string, unknown>>) {
  const header = call.headers['idempotency-key']
  return {
    deadline: call.deadline ?? null,
    key: (typeof header === 'string' ? header : call.metadata.idempotency_key) ?? null,
    timeoutHeader: call.headers['trivium-timeout-ms'] ?? null,
  }
}

const app = Fastify({ forceCloseConnections: true })
await app.register(triviumCorePlugin)
app.trivium.endpoint('things.create', endpoints.create, (_req, call) => seen(call))
app.trivium.endpoint('things.read', endpoints.read, (_req, call) => seen(call))
/** Resolves with the deadline the `hang` handler had, once its signal aborted. */
let hangAborted!: (deadline: number | null) => void
const hangEnded = new Promise<number | null>((resolve) => {
  hangAborted = resolve
})
app.trivium.endpoint('hang', endpoints.hang, async (_req, call) => {
  const deadline = call.deadline ?? null
  // Never answers: only the caller going away (or a server deadline) ends it.
  await new Promise<void>((resolve) => call.signal.addEventListener('abort', () => resolve()))
  hangAborted(deadline)
  return {}
})
await app.register(triviumWebSocketPlugin, { shutdownGraceMs: 50 })
await app.register(triviumTcpPlugin, { port: 0, shutdownGraceMs: 50 })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => app.close())

/** An HTTP client whose fetch records the header names it is given (the client's own, not undici's). */
function recordingClient(options: Record<string, unknown> = {}) {
  const sent: string[][] = []
  const client = createClient({
    transport: 'http',
    url,
    endpoints,
    format: 'json',
    token: 'a-token',
    fetch: (input: string, init: RequestInit & Record<string, unknown>) => {
      sent.push(Object.keys(init.headers as Record<string, string>).sort())
      return fetch(input, init)
    },
    ...options,
  })
  t.teardown(() => client.close())
  return { client, sent }
}

t.test('default options: only Accept, Authorization and Content-Type; no deadline, no key', async (t) => {
  const { client, sent } = recordingClient()
  t.same(await client.call('create', { a: 1 }), { deadline: null, key: null, timeoutHeader: null })
  t.same(await client.call('read', {}), { deadline: null, key: null, timeoutHeader: null })
  t.same(sent, [
    ['accept', 'authorization', 'content-type'],
    ['accept', 'authorization'],
  ])
})

t.test(
  'the default deadline (30000 ms) is enforced by the client: TimeoutException, and the server sees the caller leave',
  { timeout: 120_000 },
  async (t) => {
    const { client, sent } = recordingClient()
    const err = await client.call('hang', {}).catch((e: unknown) => e)
    t.ok(err instanceof TimeoutException)
    t.match(err, {
      name: 'TimeoutException',
      code: 'TRV_TIMEOUT',
      message: 'Call to hang timed out after 30000 ms',
    })
    t.same(sent, [['accept', 'authorization']], 'no Trivium-Timeout-Ms')
    t.equal(await hangEnded, null, 'the server had no deadline: it stopped because the request went away')
  },
)

t.test('a deadline the caller sets is sent: per call, or the client option', async (t) => {
  const perCall = recordingClient()
  const a = (await perCall.client.call('read', {}, { timeoutMs: 5000 })) as ReturnType<typeof seen>
  t.ok(Number(a.timeoutHeader) > 0 && Number(a.timeoutHeader) <= 5000, `sent ${a.timeoutHeader}`)
  t.ok((a.deadline ?? 0) > 0 && (a.deadline ?? 0) <= 5000, `the server's deadline ${a.deadline}`)
  t.same(perCall.sent, [['accept', 'authorization', 'trivium-timeout-ms']])

  const clientWide = recordingClient({ timeoutMs: 4000 })
  for (const name of ['read', 'create'] as const) {
    const b = (await clientWide.client.call(name, {})) as ReturnType<typeof seen>
    t.ok(Number(b.timeoutHeader) > 0 && Number(b.timeoutHeader) <= 4000, `${name}: sent ${b.timeoutHeader}`)
    t.equal(b.key, null, `${name}: still no idempotency key`)
  }
  // The default value given explicitly is a deadline asked for too.
  const explicitDefault = recordingClient({ timeoutMs: 30_000 })
  const c = (await explicitDefault.client.call('read', {})) as ReturnType<typeof seen>
  t.ok(Number(c.timeoutHeader) > 20_000, `sent ${c.timeoutHeader}`)
  // 0 switches deadlines off: nothing to send.
  const off = recordingClient({ timeoutMs: 0 })
  t.same(await off.client.call('read', {}), { deadline: null, key: null, timeoutHeader: null })
  t.same(await off.client.call('read', {}, { timeoutMs: 0 }), {
    deadline: null,
    key: null,
    timeoutHeader: null,
  })
})

t.test(
  'an idempotency key is sent when given, or generated for POST when the client has retries',
  async (t) => {
    const given = recordingClient()
    t.match(await given.client.call('create', {}, { idempotencyKey: 'key-1' }), { key: 'key-1' })
    t.match(await given.client.call('read', {}, { idempotencyKey: 'key-2' }), { key: 'key-2' })
    t.same(given.sent, [
      ['accept', 'authorization', 'content-type', 'idempotency-key'],
      ['accept', 'authorization', 'idempotency-key'],
    ])
    const retrying = recordingClient({ retries: 2 })
    const created = (await retrying.client.call('create', {})) as ReturnType<typeof seen>
    t.match(
      created.key,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      'a generated key',
    )
    t.equal(((await retrying.client.call('read', {})) as ReturnType<typeof seen>).key, null, 'none for GET')
  },
)

t.test('WebSocket and TCP keep sending the default deadline and a generated key as metadata', async (t) => {
  const port = (app.server.address() as { port: number }).port
  const clients = [
    createClient({ transport: 'websocket', url: `ws://127.0.0.1:${port}/ws`, endpoints, format: 'json' }),
    createClient({
      transport: 'tcp',
      port: app.triviumTcp.address()?.port as number,
      endpoints,
      format: 'json',
    }),
  ]
  for (const client of clients) {
    t.teardown(() => client.close())
    const created = (await client.call('create', {})) as ReturnType<typeof seen>
    t.ok((created.deadline ?? 0) > 20_000, `${client.transport}: the server's deadline ${created.deadline}`)
    t.match(created.key, /^[0-9a-f-]{36}$/, `${client.transport}: a generated key`)
  }
})
