// Issue 34 item 2 (PROTOCOL.md "Compression"): the whole conformance table, then the compression cases,
// on every transport (HTTP, WebSocket, TCP direct and inject, the in-memory carrier) with compression on
// in the server and negotiated by @trivium/client; bytes on the wire measured through a counting proxy
// (the in-memory carrier counts what it delivers); a request inflating past the limit on each transport.
import { createServer, connect as netConnect, type Server } from 'node:net'
import {
  createClient,
  type TriviumClient,
  type WebSocketConstructor,
  zlibFrameCodec,
} from '@trivium/client/node'
import {
  COMPRESSIBLE_TEXT,
  type ConformanceServer,
  compressionCases,
  Echo,
  endpoints,
  INFLATES_PAST_LIMIT,
  startConformanceServer,
  type UnaryCase,
  unaryCases,
} from '@trivium/conformance'
import type { Test } from 'tap'
import t from 'tap'
import WebSocket from 'ws'
import { memoryWire, registerMemoryTransport } from './memory-transport.ts'

type Target = 'http' | 'websocket' | 'tcp-direct' | 'tcp-inject' | 'memory'
const TARGETS: Target[] = ['http', 'websocket', 'tcp-direct', 'tcp-inject', 'memory']

/** A TCP proxy counting the bytes the server sends back (what crosses the wire). */
async function countingProxy(
  port: number,
): Promise<{ port: number; fromServer: () => number; server: Server }> {
  let fromServer = 0
  const server = createServer((client) => {
    const upstream = netConnect(port, '127.0.0.1')
    upstream.on('data', (chunk: Buffer) => {
      fromServer += chunk.length
    })
    client.pipe(upstream)
    upstream.pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close)
    upstream.on('error', close)
    client.on('close', close)
    upstream.on('close', close)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as { port: number }).port, fromServer: () => fromServer, server }
}

/** The `ws` package without permessage-deflate: a client that does not offer it. */
class PlainWebSocket extends WebSocket {
  constructor(url: string, protocols?: string | string[]) {
    super(url, protocols, { perMessageDeflate: false })
  }
}

interface Setup {
  server: ConformanceServer
  memory: WebSocketConstructor
  http: Awaited<ReturnType<typeof countingProxy>>
  tcp: Awaited<ReturnType<typeof countingProxy>>
}

const setups = new Map<'direct' | 'inject', Promise<Setup>>()
function setupFor(mode: 'direct' | 'inject'): Promise<Setup> {
  let setup = setups.get(mode)
  if (!setup) {
    setup = (async () => {
      let memory: WebSocketConstructor | undefined
      const server = await startConformanceServer({
        tcpMode: mode,
        compression: true,
        register: (app) => {
          memory = registerMemoryTransport(app, { compression: true }) as unknown as WebSocketConstructor
        },
      })
      const http = await countingProxy(Number(new URL(server.httpUrl).port))
      const tcp = await countingProxy(server.tcpPort)
      return { server, memory: memory as WebSocketConstructor, http, tcp }
    })()
    setups.set(mode, setup)
  }
  return setup
}
t.teardown(async () => {
  for (const setup of setups.values()) {
    const { server, http, tcp } = await setup
    http.server.close()
    tcp.server.close()
    await server.close()
  }
})

/** A client of `target` through the counting proxy; `compressed: false` gives one that does not negotiate. */
function clientFor(
  target: Target,
  setup: Setup,
  token: string | undefined,
  compressed: boolean,
  format: 'binary' | 'json',
): TriviumClient {
  const common = { endpoints, token, format, reconnectAttempts: 0, timeoutMs: 20_000 }
  switch (target) {
    case 'http':
      return createClient({
        ...common,
        transport: 'http',
        url: `http://127.0.0.1:${setup.http.port}`,
        ...(compressed ? { compressRequests: true } : { headers: { 'accept-encoding': 'identity' } }),
      })
    case 'websocket':
      return createClient({
        ...common,
        transport: 'websocket',
        url: `ws://127.0.0.1:${setup.http.port}/ws`,
        ...(compressed ? {} : { WebSocket: PlainWebSocket as unknown as WebSocketConstructor }),
      })
    case 'memory':
      return createClient({
        ...common,
        transport: 'websocket',
        url: 'ws://memory/',
        WebSocket: setup.memory,
        ...(compressed ? { frameCompression: { codec: zlibFrameCodec } } : {}),
      })
    default:
      return createClient({
        ...common,
        transport: 'tcp',
        host: '127.0.0.1',
        port: setup.tcp.port,
        compression: compressed,
      })
  }
}

function wireBytes(target: Target, setup: Setup): number {
  if (target === 'memory') return memoryWire.delivered
  return target.startsWith('tcp') ? setup.tcp.fromServer() : setup.http.fromServer()
}

let nextUser = 5000

async function runCase(t: Test, client: TriviumClient, c: UnaryCase): Promise<void> {
  const endpoint = c.endpoint === 'missing.endpoint' ? missing : c.endpoint
  for (let i = 0; i < (c.warmup ?? 0); i++) await client.call(endpoint, c.request)
  let value: unknown
  let error: (Error & Record<string, unknown>) | undefined
  try {
    value = await client.call(endpoint, c.request)
  } catch (err) {
    error = err as Error & Record<string, unknown>
  }
  if ('value' in c.expect) {
    t.notOk(error, error ? `unexpected ${error.name}: ${error.message}` : 'no error')
    const spec = endpoints[c.endpoint as keyof typeof endpoints]
    t.same(spec.response.toJSON(value as never), spec.response.toJSON(c.expect.value as never))
    if (c.endpoint === 'echo') t.ok(Echo.equalsValue(value as Echo, c.expect.value as Echo), 'equal values')
    return
  }
  const expected = c.expect.error
  t.ok(error, `fails with ${expected.kind}`)
  if (!error) return
  t.equal(error.name, expected.kind)
  t.equal(error.code, expected.code)
  if (expected.message !== undefined) t.equal(error.message, expected.message)
  if (expected.messagePattern) t.match(error.message, expected.messagePattern)
  if (expected.details) t.same(error.details, expected.details)
}

const missing = {
  name: 'missing.endpoint',
  method: 'GET' as const,
  url: '/missing',
  request: endpoints['public.ping'].request,
  response: endpoints['public.ping'].response,
  streaming: false,
}

for (const target of TARGETS) {
  for (const format of ['binary', 'json'] as const) {
    t.test(`${target} (${format}), compression on`, async (t) => {
      const setup = await setupFor(target === 'tcp-inject' ? 'inject' : 'direct')
      const tokens = await setup.server.tokensFor(nextUser++)
      const clients: TriviumClient[] = []
      const make = (token: string | undefined, compressed = true) => {
        const client = clientFor(target, setup, token, compressed, format)
        clients.push(client)
        return client
      }
      t.teardown(async () => {
        for (const client of clients) await client.close()
      })
      const byToken = new Map<string, TriviumClient>()
      for (const c of [...unaryCases, ...compressionCases]) {
        if (c.formats && !c.formats.includes(format)) continue
        await t.test(c.name, async (t) => {
          const token = tokens[c.token]
          const key = String(c.token)
          let client = byToken.get(key)
          if (!client) {
            client = make(token)
            byToken.set(key, client)
          }
          await runCase(t, client, c)
        })
      }

      await t.test('a stream yields its items in order, compressed', async (t) => {
        const client = make(tokens.member)
        const items: number[] = []
        for await (const tick of client.stream<{ i: number }>('count', { n: 300 })) items.push(tick.i)
        t.same(
          items,
          Array.from({ length: 300 }, (_, i) => i),
        )
      })

      await t.test('bytes on the wire: compressed is a fraction of plain', async (t) => {
        const request = { text: COMPRESSIBLE_TEXT, count: 1 }
        const measure = async (compressed: boolean) => {
          const client = make(tokens.member, compressed)
          await client.call('public.ping', {}) // connected, negotiated
          const before = wireBytes(target, setup)
          const value = (await client.call('echo', request)) as Echo
          t.equal(value.text, COMPRESSIBLE_TEXT)
          return wireBytes(target, setup) - before
        }
        const plain = await measure(false)
        const packed = await measure(true)
        t.ok(plain > COMPRESSIBLE_TEXT.length, `plain: ${plain} bytes`)
        t.ok(packed * 5 < plain, `compressed: ${packed} bytes, plain ${plain}`)
      })

      await t.test(
        'hostile: a request inflating past the body limit is refused, the server serves on',
        async (t) => {
          const client = make(tokens.member)
          await client.call('public.ping', {})
          const error = await client.call('echo', { text: INFLATES_PAST_LIMIT, count: 1 }).then(
            () => undefined,
            (err: Error & { code?: string }) => err,
          )
          if (target === 'websocket') {
            // permessage-deflate: ws stops inflating at maxPayload and closes with 1009.
            t.equal(error?.name, 'NetworkException', 'the connection is closed (1009)')
            t.match(error?.message, /1009/)
          } else {
            t.equal(error?.name, 'PayloadTooLargeException')
            t.equal(error?.code, 'TRV_PAYLOAD_TOO_LARGE')
            t.equal(
              error?.message,
              target === 'http'
                ? 'Request body is too large'
                : 'Frame inflates to more than the limit of 1049600 bytes',
            )
          }
          const next = make(tokens.member)
          t.same(await next.call('public.ping', {}), { ok: true }, 'a new connection is served')
        },
      )
    })
  }
}
