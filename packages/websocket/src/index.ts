// @trivium/websocket — every Trivium endpoint over one binary WebSocket per client (PROTOCOL.md
// "WebSocket"). The upgrade route and its refusals live here; what frames mean is
// @trivium/frame-session's, what bytes look like is carrier.ts's.
import type { Duplex } from 'node:stream'
import websocket from '@fastify/websocket'
import { ValidationException, websocketCredential } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import { FrameServer, FrameSession } from '@trivium/frame-session'
import { decodeMetadata } from '@trivium/wire'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { WebSocket } from 'ws'
import { WebSocketCarrier } from './carrier.js'
import { resolveOptions, type TriviumWebSocketOptions } from './options.js'
import { sendUpgradeError, UPGRADE_REQUIRED, type Upgrades, upgradeCheck } from './upgrade.js'

export {
  MemoryBus,
  type PubSubBus,
  type PushEnvelope,
  type Session,
  SessionHub,
  type SessionMatch,
} from '@trivium/wire/sessions'
export { CloseCode } from './close-codes.js'
export type { ConnectionIdentity, TriviumWebSocketOptions } from './options.js'
export { BAD_HANDSHAKE, ORIGIN_NOT_ALLOWED, UPGRADE_REQUIRED } from './upgrade.js'

export interface TriviumWebSocketServer {
  /** Open connections. */
  readonly connections: number
  /** Closes matching sessions (token id, `{ userId }`, `{ tokenId }` or predicate) with code 4001. */
  closeSessions: FrameServer['hub']['closeSessions']
}

let connectionCounter = 0

declare module 'fastify' {
  interface FastifyInstance {
    triviumWebSocket: TriviumWebSocketServer
  }
}

/**
 * Errors of established sockets (a client breaking the WebSocket protocol) are the client's: one warn
 * line without a stack, and at most `limit` a minute so one client cannot flood the log.
 */
function boundedErrorLog(fastify: FastifyInstance, limit = 10) {
  let windowStart = 0
  let logged = 0
  let suppressed = 0
  return (error: Error, socket: WebSocket): void => {
    const now = Date.now()
    if (now - windowStart >= 60_000) {
      if (suppressed > 0) fastify.log.warn({ suppressed }, 'websocket client errors not logged')
      windowStart = now
      logged = 0
      suppressed = 0
    }
    if (logged < limit) {
      logged++
      fastify.log.warn({ reason: error.message }, 'websocket client error')
    } else suppressed++
    socket.terminate()
  }
}

/** Marks this plugin's route in its config (the one route an upgrade is served on). */
const WEBSOCKET_ROUTE = Symbol('trivium.websocket.route')

const triviumWebSocket: FastifyPluginAsync<TriviumWebSocketOptions> = async (
  fastify: FastifyInstance,
  raw,
) => {
  const options = resolveOptions(
    raw ?? {},
    fastify.trivium.bodyLimit,
    fastify.initialConfig.pluginTimeout ?? 10_000,
  )
  const server = new FrameServer(fastify, 'websocket', options)
  const upgrades: Upgrades = new WeakMap()

  if (fastify.hasDecorator('websocketServer')) {
    if (options.perMessageDeflate !== false) {
      throw new TypeError(
        '@trivium/websocket: perMessageDeflate cannot be applied to the @fastify/websocket the application registered: pass { options: { perMessageDeflate, maxPayload } } to it instead',
      )
    }
    // @fastify/websocket registered by the application: its preClose closes clients, so drain first.
    fastify.addHook('preClose', () => server.shutdownAll())
  } else {
    await fastify.register(websocket, {
      // ws bounds the inflated message by maxPayload too (closes 1009 past it).
      options: { maxPayload: options.maxPayload, perMessageDeflate: options.perMessageDeflate },
      errorHandler: boundedErrorLog(fastify),
      preClose: async function preClose(this: FastifyInstance) {
        // While closing, an upgrade answered 503 on the raw response leaves its socket open, which
        // would hold server.close() forever: end every later upgrade socket once answered.
        this.server.on('upgrade', (_request, socket) => {
          socket.end()
          setTimeout(() => socket.destroy(), 1000).unref()
        })
        await server.shutdownAll()
        const wss = this.websocketServer
        const closed = new Promise<void>((resolve) => wss.close(() => resolve()))
        // ws reports closed once no client is left; a socket that finished its upgrade while we were
        // draining would keep it open forever, so keep terminating until it is.
        const terminateAll = () => {
          for (const client of wss.clients) client.terminate()
        }
        terminateAll()
        const sweep = setInterval(terminateAll, 50)
        await closed
        clearInterval(sweep)
      },
    })
  }

  // An upgrade request answered over HTTP before @fastify/websocket's hooks saw it (an earlier onRequest
  // hook replied: a CORS preflight with Upgrade headers; a bad URL, answered below the routes) keeps a
  // socket Node no longer manages, open after the answer even once the client closed its side. Closed
  // once answered when hooks run (an accepted upgrade is hijacked and runs none), and when the client
  // ends its side before ws accepted the upgrade.
  const upgradeSockets = new WeakSet<object>()
  const accepted = new WeakSet<object>()
  fastify.server.on('upgrade', (_request, socket: Duplex) => {
    upgradeSockets.add(socket)
    socket.once('end', () => {
      if (!accepted.has(socket)) socket.destroy()
    })
  })
  fastify.addHook('onResponse', (request, _reply, done) => {
    if (upgradeSockets.has(request.raw.socket)) request.raw.socket.destroy()
    done()
  })

  const tickMs = Math.max(10, Math.min(options.pingIntervalMs, Math.ceil(options.idleTimeoutMs / 4)))
  fastify.addHook('onReady', async () => server.start(tickMs))

  fastify.decorate('triviumWebSocket', {
    get connections() {
      return server.sessions.size
    },
    closeSessions: (match, reason) => server.hub.closeSessions(match, reason),
  } satisfies TriviumWebSocketServer)

  const checkUpgrade = upgradeCheck(fastify, server, options, upgrades)

  // @fastify/websocket upgrades a request to any route, then closes it (ws refuses a bad handshake with
  // its own text/html 400): an upgrade to any route but this plugin's is refused with the error body.
  // Requests without an Upgrade header only pay the header check.
  const servedAt = `${fastify.prefix}${options.path}`
  fastify.addHook('onRequest', function refuseOtherUpgrades(request, reply, done) {
    if (request.headers.upgrade === undefined || WEBSOCKET_ROUTE in request.routeOptions.config) return done()
    sendUpgradeError(
      new ValidationException(`WebSocket upgrades are served at ${servedAt} only`),
      request,
      reply,
    )
  })

  fastify.route({
    method: 'GET',
    url: options.path,
    config: { [WEBSOCKET_ROUTE]: true },
    onRequest: checkUpgrade,
    // A plain GET (no upgrade) gets the error body instead of an empty 404.
    handler: (request, reply) => sendUpgradeError(new ValidationException(UPGRADE_REQUIRED), request, reply),
    wsHandler: (socket: WebSocket, request: FastifyRequest) => {
      accepted.add(request.raw.socket)
      try {
        const upgrade = upgrades.get(request) ?? { format: jsonFormat }
        const carrier = new WebSocketCarrier(socket, request.raw.socket, options)
        const id = `w${(++connectionCounter).toString(36)}`
        const headers = request.headers
        const query = request.query as Record<string, unknown>
        const session = new FrameSession(carrier, server, {
          id,
          clientIp: request.ip,
          log: request.log.child({ connection: id }),
          format: upgrade.format,
          headers,
          query,
          credential: () => websocketCredential(headers, query),
          // The credential and the format stay the connection's; metadata carries per-call keys.
          ...(upgrade.metadata
            ? {
                splitRequest: (payload: Uint8Array) => {
                  const { metadata, rest } = decodeMetadata(payload)
                  return { metadata, formatName: undefined, payload: rest }
                },
              }
            : {}),
        })
        carrier.attach(session)
        server.add(session)
        if (upgrade.identity) session.identify(upgrade.identity)
      } catch (err) {
        request.log.error({ err }, 'websocket connection setup failed')
        socket.close(1011, 'Internal server error')
      }
    },
  })
}

export const triviumWebSocketPlugin = fp(triviumWebSocket, {
  fastify: '^5.12.1',
  name: '@trivium/websocket',
  dependencies: ['@trivium/core'],
  decorators: { fastify: ['trivium'] },
})
export { triviumWebSocketPlugin as triviumWebSocket }
export default triviumWebSocketPlugin
