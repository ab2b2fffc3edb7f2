// One table of cases (src/cases.ts), run over every transport and payload format through
// @trivium/client, against one server per TCP mode. A features file per transport says what it
// supports (connect-es's conformance model).
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createClient, type TriviumClient, type WebSocketConstructor } from '@trivium/client/node'
import {
  type ConformanceServer,
  createTypedClient,
  Echo,
  Empty,
  endpoints,
  Pong,
  startConformanceServer,
  type TokenKind,
  unaryCases,
} from '@trivium/conformance'
import t from 'tap'
import { type MemoryWebSocket, registerMemoryTransport } from './memory-transport.ts'

interface Features {
  transport: 'http' | 'websocket' | 'tcp' | 'memory'
  formats: ('binary' | 'json')[]
  streaming: string
  cancel: boolean
  tcpMode: 'direct' | 'inject' | null
}

const featuresDir = new URL('../features/', import.meta.url)
const targets = readdirSync(featuresDir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({
    name: f.replace(/\.json$/, ''),
    ...(JSON.parse(readFileSync(new URL(f, featuresDir), 'utf8')) as Features),
  }))

const missing = {
  name: 'missing.endpoint',
  method: 'GET' as const,
  url: '/missing',
  request: Empty,
  response: Pong,
  streaming: false,
}

let nextUser = 1000

const servers = new Map<string, Promise<ConformanceServer>>()
/** The in-memory transport's client class, per server (a test-only fourth frame transport). */
const memorySockets = new Map<ConformanceServer['app'], typeof MemoryWebSocket>()
function serverFor(mode: 'direct' | 'inject'): Promise<ConformanceServer> {
  let server = servers.get(mode)
  if (!server) {
    server = startConformanceServer({
      tcpMode: mode,
      register: (app) => {
        memorySockets.set(app, registerMemoryTransport(app))
      },
    })
    servers.set(mode, server)
  }
  return server
}
t.teardown(async () => {
  for (const server of servers.values()) await (await server).close()
})

for (const target of targets) {
  for (const format of target.formats) {
    t.test(`${target.name} (${format})`, async (t) => {
      const server = await serverFor(target.tcpMode ?? 'direct')
      const tokens = await server.tokensFor(nextUser++)
      const clients = new Map<TokenKind, TriviumClient>()
      const clientFor = (kind: TokenKind): TriviumClient => {
        let client = clients.get(kind)
        if (!client) {
          const token = tokens[kind]
          const common = { endpoints, token, format, reconnectAttempts: 0, timeoutMs: 10_000 }
          client =
            target.transport === 'http'
              ? createClient({ ...common, transport: 'http', url: server.httpUrl })
              : target.transport === 'websocket'
                ? createClient({ ...common, transport: 'websocket', url: server.wsUrl })
                : target.transport === 'memory'
                  ? createClient({
                      ...common,
                      transport: 'websocket',
                      url: 'ws://memory/',
                      WebSocket: memorySockets.get(server.app) as unknown as WebSocketConstructor,
                    })
                  : createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: server.tcpPort })
          clients.set(kind, client)
        }
        return client
      }
      t.teardown(async () => {
        for (const client of clients.values()) await client.close()
      })

      for (const c of unaryCases) {
        if (c.formats && !c.formats.includes(format)) continue
        await t.test(c.name, async (t) => {
          const client = clientFor(c.token)
          const endpoint = c.endpoint === missing.name ? missing : c.endpoint
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
            if (c.endpoint === 'echo')
              t.ok(Echo.equalsValue(value as Echo, c.expect.value as Echo), 'equal values')
            return
          }
          const expected = c.expect.error
          t.ok(error, `fails with ${expected.kind}`)
          if (!error) return
          t.equal(error.name, expected.kind)
          t.equal(error.code, expected.code)
          if (expected.message !== undefined) t.equal(error.message, expected.message)
          if (expected.messagePattern) t.match(error.message, expected.messagePattern)
          if (expected.retryAfter) t.ok(Number(error.retryAfter) > 0, `retryAfter ${error.retryAfter}`)
          if (expected.details) t.same(error.details, expected.details)
        })
      }

      await t.test('a streaming endpoint yields its items in order', async (t) => {
        const typed = createTypedClient(clientFor('member'))
        const items: number[] = []
        for await (const tick of typed.count({ n: 5 })) items.push(tick.i)
        t.same(items, [0, 1, 2, 3, 4])
      })

      await t.test('breaking out of a stream cancels it on the server', async (t) => {
        const typed = createTypedClient(clientFor('member'))
        const runId = randomBytes(6).toString('hex')
        const items: number[] = []
        for await (const tick of typed.ticker({ runId })) {
          items.push(tick.i)
          if (items.length === 3) break
        }
        t.same(items, [0, 1, 2])
        const deadline = Date.now() + 5000
        while (!server.tickerFinished(runId) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20))
        t.ok(server.tickerFinished(runId), "the server generator's finally ran")
      })

      await t.test('a stream without a token is refused like a call', async (t) => {
        const typed = createTypedClient(clientFor('none'))
        await t.rejects(
          (async () => {
            for await (const _ of typed.count({ n: 1 })) {
              // nothing: the stream must not open
            }
          })(),
          { name: 'UnauthorizedException', message: 'Authentication required' },
        )
      })
    })
  }
}
