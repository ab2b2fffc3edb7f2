// The server under test: every Trivium plugin that shapes a call's outcome (codec, auth, RBAC
// middleware, rate limiting), the WebSocket and TCP transports, and the conformance endpoints.
import triviumAuth, { TokenService } from '@trivium/auth'
import triviumCodec from '@trivium/codec'
import triviumCore, {
  type Http2TlsSetting,
  triviumFactoryOptions,
  triviumHttp2Options,
  ValidationException,
} from '@trivium/core'
import triviumProtections from '@trivium/protections'
import { createRbacMiddleware } from '@trivium/rbac'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify, { type FastifyInstance } from 'fastify'
import { implementConformanceContract } from './contract-group.js'
import { registerEndpoints } from './generated/server.js'
import { registerNamedRoutes } from './named-routes.js'

export const SECRET = 'conformance-secret-conformance-secret-0123456789'
/**
 * The credit window of client streams on every transport of the conformance server: small, so that a
 * stream of a hundred items needs several CREDITs and a few items fill it (PROTOCOL.md "Client and
 * bidirectional streams").
 */
export const CLIENT_STREAM_WINDOW_BYTES = 200
export const ISSUER = 'trivium-conformance'

export interface ConformanceServer {
  app: FastifyInstance
  httpUrl: string
  wsUrl: string
  tcpPort: number
  /** Tokens of one test user (a fresh user id per transport run keeps rate-limit keys apart). */
  tokensFor(userId: number): Promise<Record<TokenKind, string | undefined>>
  /** Whether the `ticker` stream (or the `gated` client stream) of this run has run its `finally`. */
  tickerFinished(runId: string): boolean
  /** `gated` items of this run wait until the gate is opened for them: `openGate(runId, 8)` lets 8 more through. */
  openGate(runId: string, items: number): void
  /** How many `gated` items of this run the handler has taken (passed the gate). */
  gateTaken(runId: string): number
  /** How many `gated` items of this run reached the gate (read from the stream). */
  gateReached(runId: string): number
  close(): Promise<void>
}

export type TokenKind = 'none' | 'member' | 'admin' | 'bad' | 'expired' | 'revoked' | 'refresh'

/** What the conformance server runs with. */
interface ConformanceServerOptions {
  tcpMode: 'direct' | 'inject'
  /** Registers more transports on the app before it listens (e.g. a test-only one). */
  register?: (app: FastifyInstance) => void | Promise<void>
  /**
   * Compression on every transport (PROTOCOL.md "Compression"), threshold 0: whatever deflate makes
   * smaller goes compressed, so the whole table runs compressed.
   */
  compression?: boolean
  /** Where the app's log lines go (JSON, from `level` up); no logging without it. */
  log?: { level: string; stream: { write(line: string): void } }
  /** HTTP/2: over TLS with this certificate (HTTP/1.1 on the same port), or cleartext h2c (PROTOCOL.md "HTTP/2"). */
  http2?: Http2TlsSetting | 'h2c'
}

/** The app with every plugin of the server under test registered (endpoints not yet). */
async function createApp(
  options: ConformanceServerOptions,
  http2: ReturnType<typeof triviumHttp2Options> | undefined,
) {
  // Without Node's own Host check: @trivium/core refuses a missing Host with the error body.
  const http = { ...(http2 && 'http' in http2 ? http2.http : {}), requireHostHeader: false }
  // Fastify's types make an HTTP/2 instance a type of its own; the plugins serve both alike.
  const app = Fastify({
    ...triviumFactoryOptions(),
    ...http2,
    logger: options.log ?? false,
    http,
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance
  const compress = options.compression === true
  // The conformance app owns its whole app, as the demo does: the error body on every route and path.
  const wholeApp = { errorHandler: true, notFoundHandler: true }
  await app.register(triviumCore, compress ? { ...wholeApp, compression: { threshold: 0 } } : wholeApp)
  await app.register(triviumCodec)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  app.trivium.use(createRbacMiddleware(), { name: 'rbac', after: ['auth'] })
  await app.register(triviumProtections)
  await app.register(triviumWebSocket, {
    clientStreamWindowBytes: CLIENT_STREAM_WINDOW_BYTES,
    ...(compress ? { perMessageDeflate: { threshold: 0 } } : {}),
  })
  await app.register(triviumTcp, {
    port: 0,
    mode: options.tcpMode,
    clientStreamWindowBytes: CLIENT_STREAM_WINDOW_BYTES,
    ...(compress ? { compression: { threshold: 0 } } : {}),
  })
  return app
}

type Gate = { allowed: number; taken: number; reached: number; wake: (() => void) | undefined }

/** The conformance endpoints; `finished` and `gate` are how the tests see the streams' ends and gates. */
function registerConformanceEndpoints(
  app: FastifyInstance,
  finished: Set<string>,
  gate: (runId: string) => Gate,
): void {
  registerEndpoints(app.trivium, {
    'public.ping': () => ({ ok: true }),
    echo: (req) => {
      if (req.text.trim() === '') {
        throw new ValidationException('Text must not be empty', [
          { field: 'text', message: 'must not be empty' },
        ])
      }
      return req
    },
    'perm.only': () => ({ ok: true }),
    'role.only': () => ({ ok: true }),
    limited: () => ({ ok: true }),
    count: async function* (req) {
      for (let i = 0; i < req.n; i++) yield { i }
    },
    ticker: async function* (req, call) {
      try {
        for (let i = 0; !call.signal.aborted; i++) {
          yield { i }
          await new Promise((r) => setTimeout(r, 5))
        }
      } finally {
        finished.add(req.runId)
      }
    },
    'tickers.status': (req) => ({ finished: finished.has(req.runId) }),
    lookup: (req) => req,
    // Client and bidirectional streams (PROTOCOL.md "Client and bidirectional streams"). A negative item
    // stops the reading early: the server answers with what it has (STOP_SENDING, then the answer).
    sum: async (requests) => {
      let sum = 0
      let count = 0
      for await (const tick of requests) {
        if (tick.i < 0) break
        sum += tick.i
        count++
      }
      return { sum, count }
    },
    double: async function* (requests) {
      for await (const tick of requests) {
        if (tick.i < 0) break
        yield { i: tick.i * 2 }
      }
    },
    gated: async (requests, call) => {
      let runId: string | undefined
      let count = 0
      try {
        for await (const item of requests) {
          runId = item.runId
          const g = gate(item.runId)
          g.reached++
          while (g.allowed <= g.taken) {
            if (call.signal.aborted) throw call.signal.reason
            await new Promise<void>((resolve) => {
              g.wake = resolve
              call.signal.addEventListener('abort', () => resolve(), { once: true })
            })
          }
          g.taken++
          count++
        }
        return { sum: count, count }
      } finally {
        if (runId !== undefined) finished.add(runId)
      }
    },
  })
}

export async function startConformanceServer(options: ConformanceServerOptions): Promise<ConformanceServer> {
  const http2 = options.http2 === undefined ? undefined : triviumHttp2Options(options.http2)
  const app = await createApp(options, http2)
  const finished = new Set<string>()
  // The `gated` client stream: a handler that reads only as fast as the test lets it (backpressure).
  const gates = new Map<string, Gate>()
  const gate = (runId: string) => {
    let g = gates.get(runId)
    if (!g) {
      g = { allowed: 0, taken: 0, reached: 0, wake: undefined }
      gates.set(runId, g)
    }
    return g
  }
  registerConformanceEndpoints(app, finished, gate)
  registerNamedRoutes(app)
  implementConformanceContract(app)

  await options.register?.(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const tcpAddress = app.triviumTcp.address()
  if (tcpAddress === null) throw new Error('the TCP transport is not listening after app.listen()')
  const past = new TokenService({ secret: SECRET, issuer: ISSUER, clock: () => Date.now() - 2 * 3600_000 })

  const tls = http2 !== undefined && 'https' in http2
  return {
    app,
    httpUrl: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    wsUrl: `${tls ? 'wss' : 'ws'}://127.0.0.1:${port}/ws`,
    tcpPort: tcpAddress.port,
    async tokensFor(userId) {
      const subject = { id: userId, username: `user${userId}`, email: `user${userId}@example.com` }
      const member = app.triviumAuth.issueAccessToken({
        ...subject,
        roles: ['member'],
        permissions: ['echo:use'],
      })
      const admin = app.triviumAuth.issueAccessToken({
        ...subject,
        roles: ['admin'],
        permissions: ['echo:use', 'secret:write'],
      })
      const revoked = app.triviumAuth.issueAccessToken({
        ...subject,
        roles: ['member'],
        permissions: ['echo:use'],
      })
      await app.triviumAuth.revokeToken(await revoked)
      return {
        none: undefined,
        member: await member,
        admin: await admin,
        bad: 'not.a.jwt',
        expired: past.issueAccessToken({ userId, username: subject.username, email: subject.email }),
        revoked: await revoked,
        refresh: await app.triviumAuth.issueRefreshToken(userId),
      }
    },
    tickerFinished: (runId) => finished.has(runId),
    openGate(runId, items) {
      const g = gate(runId)
      g.allowed += items
      const wake = g.wake
      g.wake = undefined
      wake?.()
    },
    gateTaken: (runId) => gate(runId).taken,
    gateReached: (runId) => gate(runId).reached,
    close: () => app.close(),
  }
}
