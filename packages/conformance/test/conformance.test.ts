// One table of cases (src/cases.ts), run over every transport and payload format through
// @trivium/client, against one server per TCP mode. A features file per transport says what it
// supports (connect-es's conformance model).
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createClient, type TriviumClient, type WebSocketConstructor } from '@trivium/client/node'
import {
  CLIENT_STREAM_WINDOW_BYTES,
  type ConformanceServer,
  contractCases,
  contractEndpointTable,
  createTypedClient,
  Echo,
  Empty,
  endpoints,
  GatedTick,
  namedRouteCases,
  namedRouteEndpoints,
  Pong,
  startConformanceServer,
  type TokenKind,
  Total,
  unaryCases,
} from '@trivium/conformance'
import t, { type Test } from 'tap'
import { Agent, type Dispatcher, H2CClient, fetch as undiciFetch } from 'undici'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { waitBound } from '../../../scripts/test/waits.js'
import { type MemoryWebSocket, registerMemoryTransport } from './memory-transport.ts'

interface Features {
  transport: 'http' | 'websocket' | 'tcp' | 'memory'
  formats: ('binary' | 'json')[]
  streaming: string
  cancel: boolean
  tcpMode: 'direct' | 'inject' | null
  /**
   * The app serves HTTP/2: h2 over TLS (HTTP/1.1 allowed on the same port) or cleartext h2c (PROTOCOL.md
   * "HTTP/2"). HTTP lanes then call over HTTP/2; the TCP inject lane checks its bridge on such an app.
   */
  http2?: 'tls' | 'h2c'
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

const certificate = selfSigned()
t.teardown(() => certificate.remove())
const servers = new Map<string, Promise<ConformanceServer>>()
/** The in-memory transport's client class, per server (a test-only fourth frame transport). */
const memorySockets = new Map<ConformanceServer['app'], typeof MemoryWebSocket>()
/** The HTTP versions of the requests each server answered (an HTTP/2 lane must not fall back to 1.1). */
const httpVersions = new Map<ConformanceServer['app'], Set<string>>()
function serverFor(mode: 'direct' | 'inject', http2?: 'tls' | 'h2c'): Promise<ConformanceServer> {
  const key = `${mode} ${http2 ?? 'http1'}`
  let server = servers.get(key)
  if (!server) {
    const { key: tlsKey, cert } = certificate
    server = startConformanceServer({
      tcpMode: mode,
      ...(http2 ? { http2: http2 === 'h2c' ? 'h2c' : { key: tlsKey, cert } } : {}),
      register: (app) => {
        memorySockets.set(app, registerMemoryTransport(app))
        const versions = new Set<string>()
        httpVersions.set(app, versions)
        app.addHook('onRequest', (request, _reply, done) => {
          versions.add(request.raw.httpVersion)
          done()
        })
      },
    })
    servers.set(key, server)
  }
  return server
}
t.teardown(async () => {
  for (const server of servers.values()) await (await server).close()
})

type LaneFetch = (url: string, init?: RequestInit) => Promise<Response>

/** The fetch of an HTTP lane: undici's over HTTP/2 (ALPN h2 with the test certificate, or h2c), else the global one. */
function laneFetch(
  t: Test,
  server: ConformanceServer,
  http2: 'tls' | 'h2c' | undefined,
): LaneFetch | undefined {
  if (http2 === undefined) return undefined
  const dispatcher: Dispatcher =
    http2 === 'h2c'
      ? new H2CClient(server.httpUrl)
      : new Agent({ allowH2: true, connect: { ca: certificate.cert } })
  t.teardown(() => dispatcher.close())
  return (url, init) => undiciFetch(url, { ...(init as object), dispatcher }) as unknown as Promise<Response>
}

for (const target of targets) {
  for (const format of target.formats) {
    t.test(`${target.name} (${format})`, async (t) => {
      const server = await serverFor(target.tcpMode ?? 'direct', target.http2)
      const httpFetch = laneFetch(t, server, target.http2)
      const tokens = await server.tokensFor(nextUser++)
      const clients = new Map<TokenKind, TriviumClient>()
      const clientFor = (kind: TokenKind): TriviumClient => {
        let client = clients.get(kind)
        if (!client) {
          const token = tokens[kind]
          const table = { ...endpoints, ...namedRouteEndpoints, ...contractEndpointTable }
          const common = { endpoints: table, token, format, reconnectAttempts: 0, timeoutMs: 10_000 }
          client =
            target.transport === 'http'
              ? createClient({
                  ...common,
                  transport: 'http',
                  url: server.httpUrl,
                  ...(httpFetch ? { fetch: httpFetch } : {}),
                })
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

      for (const c of [...unaryCases, ...namedRouteCases, ...contractCases]) {
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
            const spec = (endpoints[c.endpoint as keyof typeof endpoints] ??
              namedRouteEndpoints[c.endpoint] ??
              contractEndpointTable[c.endpoint]) as (typeof namedRouteEndpoints)[string]
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
        const deadline = Date.now() + waitBound(5000)
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

      // ---- Client and bidirectional streams (issue 34 item 3; PROTOCOL.md "Client and bidirectional
      // streams"). Frame transports carry them; HTTP/1.1 refuses them with the documented error. ----
      const refusal = (name: string) =>
        `Endpoint ${name} takes a stream of requests: call it over WebSocket or TCP`
      if (target.http2 && target.transport === 'http') {
        await t.test('every call of the lane went over HTTP/2', async (t) => {
          t.same([...(httpVersions.get(server.app) ?? [])], ['2.0'])
        })
      }
      if (target.transport === 'http') {
        await t.test('client and bidirectional streams are refused by the HTTP/1.1 client', async (t) => {
          const client = clientFor('member')
          const usage = { name: 'ClientUsageError', code: 'TRV_CLIENT_USAGE' }
          t.throws(() => client.clientStream(endpoints.sum), { ...usage, message: refusal('sum') })
          t.throws(() => client.bidiStream(endpoints.double), { ...usage, message: refusal('double') })
          const res = await (httpFetch ?? fetch)(`${server.httpUrl}/sum`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens.member}` },
            body: '{"i":1}',
          })
          t.match(res.headers.get('content-type'), /^application\/json/)
          const body = await res.json()
          // Over HTTP/2 the route serves streams of requests, in envelopes only (PROTOCOL.md "Over HTTP").
          const expected = target.http2
            ? {
                statusCode: 415,
                code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
                error: 'UnsupportedMediaTypeException',
                message:
                  'Unsupported Content-Type: a stream of requests is sent as application/trivium-stream+json or application/trivium-stream+binary',
              }
            : {
                statusCode: 400,
                code: 'TRV_VALIDATION',
                error: 'ValidationException',
                message: refusal('sum'),
              }
          t.equal(res.status, expected.statusCode)
          t.same(
            { statusCode: body.statusCode, code: body.code, error: body.error, message: body.message },
            expected,
          )
        })
        return
      }

      await t.test('a client stream sends its items (credit refilled) and gets one response', async (t) => {
        const sum = createTypedClient(clientFor('member')).sum()
        const items = Array.from({ length: 100 }, (_, i) => ({ i: i + 1 }))
        t.equal(await sum.sendAll(items), true)
        t.same(Total.fromJSON((await sum.response).toJSON()).toJSON(), { sum: 5050, count: 100 })
      })

      await t.test(
        'a bidirectional stream answers each item while more items are still to come',
        async (t) => {
          const double = createTypedClient(clientFor('member')).double()
          const answers = double[Symbol.asyncIterator]()
          for (let i = 1; i <= 20; i++) {
            t.equal(await double.send({ i }), true)
            const next = await answers.next()
            t.equal(next.value?.i, 2 * i, `answer to item ${i} before item ${i + 1} is sent`)
          }
          await double.end()
          t.same(await answers.next(), { done: true, value: undefined })
        },
      )

      await t.test(
        'a slow handler holds the sender back: send waits for credit, memory stays bounded',
        async (t) => {
          const client = clientFor('member')
          const runId = randomBytes(6).toString('hex')
          const gated = createTypedClient(client).gated()
          // Credit is in bytes: items go out while any is left, each costing its payload (PROTOCOL.md).
          const cost = (i: number) => {
            const value = GatedTick.fromJSON({ runId, i })
            const bytes =
              format === 'binary'
                ? GatedTick.encode(value).length
                : Buffer.byteLength(JSON.stringify(GatedTick.toJSON(value)))
            return Math.max(1, bytes)
          }
          let fits = 0
          for (let left = CLIENT_STREAM_WINDOW_BYTES; left > 0; fits++) left -= cost(fits)
          // The window is granted when the handler first reads; it takes one item, then waits at the gate.
          for (let i = 0; i < fits; i++) t.equal(await gated.send({ runId, i }), true)
          let sentNext = false
          const next = gated.send({ runId, i: fits }).then((ok) => {
            sentNext = true
            return ok
          })
          // A round trip on the same connection: a send that did not wait for credit would be done by now.
          await client.call(endpoints['public.ping'], {})
          t.equal(
            sentNext,
            false,
            `item ${fits + 1} waits: ${fits} items used the ${CLIENT_STREAM_WINDOW_BYTES}-byte credit`,
          )
          t.equal(server.gateReached(runId), 1, 'the handler holds one item, the rest wait in the window')
          server.openGate(runId, fits)
          t.equal(await next, true, 'credit again once the handler took half the window')
          server.openGate(runId, 1000)
          const rest = Array.from({ length: 39 - fits }, (_, k) => ({ runId, i: fits + 1 + k }))
          t.equal(await gated.sendAll(rest), true)
          t.same((await gated.response).toJSON(), { sum: 40, count: 40 })
        },
      )

      await t.test(
        'the server stops reading early: its answer comes, later sends resolve false',
        async (t) => {
          const typed = createTypedClient(clientFor('member'))
          const sum = typed.sum()
          for (const i of [1, 2, -1]) await sum.send({ i })
          t.same((await sum.response).toJSON(), { sum: 3, count: 2 })
          t.equal(await sum.send({ i: 5 }), false, 'nothing more is sent after the answer')
          const double = typed.double()
          const answers = double[Symbol.asyncIterator]()
          await double.send({ i: 4 })
          t.equal((await answers.next()).value?.i, 8)
          await double.send({ i: -1 }) // the handler breaks out of its for await: STOP_SENDING, STREAM_END
          t.same(await answers.next(), { done: true, value: undefined })
          t.equal(await double.send({ i: 6 }), false)
          t.same((await typed.public.ping({})).toJSON(), { ok: true }, 'the connection still serves calls')
        },
      )

      await t.test('cancelling a client stream stops its handler (its finally runs)', async (t) => {
        const runId = randomBytes(6).toString('hex')
        const gated = createTypedClient(clientFor('member')).gated()
        await gated.send({ runId, i: 0 })
        const reached = Date.now() + waitBound(5000)
        while (server.gateReached(runId) === 0 && Date.now() < reached)
          await new Promise((r) => setTimeout(r, 5))
        t.equal(server.gateReached(runId), 1, 'the handler holds the item')
        gated.cancel(new Error('changed my mind'))
        await t.rejects(gated.response, { message: 'changed my mind' })
        const deadline = Date.now() + waitBound(5000)
        while (!server.tickerFinished(runId) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20))
        t.ok(server.tickerFinished(runId), "the server handler's finally ran")
      })

      await t.test('a client stream without a token is refused like a call', async (t) => {
        const sum = createTypedClient(clientFor('none')).sum()
        const expected = { name: 'UnauthorizedException', message: 'Authentication required' }
        await t.rejects(sum.send({ i: 1 }), expected)
        await t.rejects(sum.response, expected)
      })
    })
  }
}
