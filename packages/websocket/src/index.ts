// @trivium/websocket — every Trivium endpoint over one binary WebSocket per client (PROTOCOL.md
// "WebSocket"). The upgrade route and its refusals live here; what frames mean is
// @trivium/frame-session's, what bytes look like is carrier.ts's.
import type { Duplex } from 'node:stream'
import { ValidationException } from '@trivium/core'
import { INTERNAL_ERROR_MESSAGE, jsonFormat } from '@trivium/core/internal'
import { connectionLogger, FrameServer, FrameSession } from '@trivium/frame-session'
import { decodeMetadata } from '@trivium/wire'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { type WebSocket, WebSocketServer } from 'ws'
import { carrierClosed, carrierError, WebSocketCarrier } from './carrier.js'
import { type ResolvedOptions, resolveOptions, type TriviumWebSocketOptions } from './options.js'
import { SETUP } from './setup-errors.js'
import { sendUpgradeError, UPGRADE_REQUIRED, type Upgrades, upgradeCheck } from './upgrade.js'
import { type UpgradeRouter, upgradeRouter } from './upgrade-router.js'
import { keepUpgradeValues } from './upgrade-values.js'

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

/**
 * The sockets' 'error' listeners, shared by every connection (`this` is the socket): a closure made in
 * the upgrade handler would keep that handler's request, with Fastify's Request and Node's
 * IncomingMessage, for the connection's life (bench/density). One listener per socket does the
 * transport's part and the carrier's.
 */
function socketErrorListeners(fastify: FastifyInstance): {
  onSocketError: (this: WebSocket, error: Error) => void
  onAppSocketError: (this: WebSocket, error: Error) => void
} {
  const logClientError = boundedErrorLog(fastify)
  return {
    onSocketError(this: WebSocket, error: Error): void {
      logClientError(error, this)
      carrierError(this, error)
    },
    // A socket the application's @fastify/websocket upgraded: the carrier's part only, added with it.
    onAppSocketError(this: WebSocket, error: Error): void {
      carrierError(this, error)
    },
  }
}

/** Marks this plugin's route in its config (the one route an upgrade is served on). */
const WEBSOCKET_ROUTE = Symbol('trivium.websocket.route')

/** `fastify.triviumWebSocket`: the open connections and closing sessions by who holds them. */
function decorateServer(fastify: FastifyInstance, server: FrameServer): void {
  fastify.decorate('triviumWebSocket', {
    get connections() {
      return server.sessions.size
    },
    closeSessions: (match, reason) => server.hub.closeSessions(match, reason),
  } satisfies TriviumWebSocketServer)
}

/** Closes every session and ends every socket before the server closes. */
function drainOnClose(
  fastify: FastifyInstance,
  server: FrameServer,
  wss: WebSocketServer,
  sockets: Set<WebSocket>,
): void {
  fastify.addHook('preClose', async () => {
    await server.shutdownAll()
    wss.close()
    // A socket that finished its upgrade while we were draining, or whose client does not answer the
    // close, would keep the server open forever: terminated until none is left.
    while (sockets.size > 0) {
      for (const socket of sockets) socket.terminate()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })
}

/**
 * Refuses upgrades no WebSocket route serves, and closes the socket of every upgrade this plugin answered
 * over HTTP.
 */
function refuseUnservedUpgrades(fastify: FastifyInstance, router: UpgradeRouter, servedAt: string): void {
  // An upgrade elsewhere is refused when no WebSocket route serves it: with no @fastify/websocket in the
  // application (this plugin routes the upgrades), every other path; with one, only a path without a
  // route (404): its routes, WebSocket or not, stay its own.
  const unserved = (request: FastifyRequest): boolean =>
    request.is404 || router.upgradeOf(request.raw)?.routedByTrivium === true
  // ws would refuse a bad handshake with its own text/html 400: the refusal is the error body.
  // Requests without an Upgrade header only pay the header check.
  fastify.addHook('onRequest', function refuseOtherUpgrades(request, reply, done) {
    if (
      request.headers.upgrade === undefined ||
      WEBSOCKET_ROUTE in request.routeOptions.config ||
      !unserved(request)
    ) {
      return done()
    }
    sendUpgradeError(
      new ValidationException(`WebSocket upgrades are served at ${servedAt} only`),
      request,
      reply,
    )
  })
  // An upgrade this plugin answered over HTTP (refused, or answered by an earlier hook such as a CORS
  // preflight) has a socket Node no longer manages: closed once answered. An accepted upgrade is
  // hijacked and runs no onResponse hook.
  fastify.addHook('onResponse', (request, _reply, done) => {
    const upgrade = router.upgradeOf(request.raw)
    if (upgrade !== undefined && (WEBSOCKET_ROUTE in request.routeOptions.config || unserved(request))) {
      upgrade.socket.destroy()
    }
    done()
  })
}

/**
 * Opens the frame session of an upgraded socket (`raw` is its TCP socket). `onError`: an 'error'
 * listener to add with the carrier's (when the upgrade's own listener was not added before).
 */
function sessionOpener(
  server: FrameServer,
  options: ResolvedOptions,
  upgrades: Upgrades,
  sockets: Set<WebSocket>,
): (socket: WebSocket, raw: Duplex, request: FastifyRequest, onError?: (error: Error) => void) => void {
  // One 'close' listener per socket for this set and the carrier (two made the socket's listener entry
  // an array: bench/density).
  const onSocketClose = function (this: WebSocket): void {
    sockets.delete(this)
    carrierClosed(this)
  }
  return (socket, raw, request, onError) => {
    sockets.add(socket)
    // `on`, not `once`: a WebSocket emits 'close' once, and `once` wraps the listener in a bound function
    // and a state object per connection (bench/density).
    socket.on('close', onSocketClose)
    try {
      const upgrade = upgrades.get(request) ?? { format: jsonFormat }
      const carrier = new WebSocketCarrier(socket, raw, options)
      const id = `w${(++connectionCounter).toString(36)}`
      const headers = request.headers
      const query = request.query as Record<string, unknown>
      // Their values, kept for every call, keep no slice of the request's URL or header text alive.
      keepUpgradeValues(headers, query)
      const session = new FrameSession(carrier, server, {
        id,
        clientIp: request.ip,
        // `request.log.child({ connection: id })`, made at the connection's first line: the upgrade's
        // logger (the application's childLoggerFactory made it) is kept, its child only when used.
        log: connectionLogger(request.log, id),
        format: upgrade.format,
        // No `credential`: core's WebSocket default, the upgrade's (its token query value, then its
        // Authorization header), read when a call asks.
        headers,
        query,
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
      if (onError !== undefined) socket.on('error', onError)
      server.add(session)
      if (upgrade.identity) session.identify(upgrade.identity)
    } catch (err) {
      request.log.error({ err }, 'websocket connection setup failed')
      socket.close(1011, INTERNAL_ERROR_MESSAGE)
    }
  }
}

const triviumWebSocket: FastifyPluginAsync<TriviumWebSocketOptions> = async (
  fastify: FastifyInstance,
  raw,
) => {
  const options = resolveOptions(
    raw ?? {},
    fastify.trivium.bodyLimit,
    fastify.initialConfig.pluginTimeout ?? 10_000,
  )
  // An application's @fastify/websocket registered before (here or in an ancestor context) wraps this
  // plugin's route like any `wsHandler` route of its own, and upgrades with its own ws server and options.
  if (fastify.hasDecorator('websocketServer') && options.perMessageDeflate !== false) {
    throw SETUP.TRV_WEBSOCKET_APP_DEFLATE()
  }
  const server = new FrameServer(fastify, 'websocket', options)
  const upgrades: Upgrades = new WeakMap()
  const router = upgradeRouter(fastify)
  // Otherwise this plugin upgrades its route's requests itself (ws bounds the inflated message by
  // maxPayload too: closes 1009 past it).
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayload,
    perMessageDeflate: options.perMessageDeflate,
    // `sockets` below tracks the connections: ws's own set would add an entry and a close listener per
    // connection (bench/density), and nothing reads `wss.clients`.
    clientTracking: false,
  })
  const { onSocketError, onAppSocketError } = socketErrorListeners(fastify)

  /** Every connection of this plugin, whichever ws server upgraded it. */
  const sockets = new Set<WebSocket>()
  drainOnClose(fastify, server, wss, sockets)
  const tickMs = Math.max(10, Math.min(options.pingIntervalMs, Math.ceil(options.idleTimeoutMs / 4)))
  fastify.addHook('onReady', async () => server.start(tickMs))

  decorateServer(fastify, server)

  const checkUpgrade = upgradeCheck(fastify, server, options, upgrades)
  refuseUnservedUpgrades(fastify, router, `${fastify.prefix}${options.path}`)
  const openSession = sessionOpener(server, options, upgrades, sockets)
  const route: RouteOptions & { wsHandler: (socket: WebSocket, request: FastifyRequest) => void } = {
    method: 'GET',
    url: options.path,
    config: { [WEBSOCKET_ROUTE]: true },
    onRequest: checkUpgrade,
    // Reached by an upgrade when no @fastify/websocket wraps this route (none, or the application's
    // registered after this plugin or in another context): upgraded here. A plain GET (no upgrade, or
    // through inject) or a HEAD gets the error body instead of an empty 404.
    handler: (request, reply) => {
      const upgrade = router.upgradeOf(request.raw)
      if (upgrade === undefined || !upgrades.has(request) || request.method !== 'GET') {
        return sendUpgradeError(new ValidationException(UPGRADE_REQUIRED), request, reply)
      }
      reply.hijack()
      router.accept(upgrade.socket)
      wss.handleUpgrade(request.raw, upgrade.socket, upgrade.head, (socket) => {
        socket.on('error', onSocketError)
        openSession(socket, upgrade.socket, request)
      })
      return reply
    },
    // Called by the application's @fastify/websocket when it wraps this route (registered before). The
    // connection is not one of the application's clients: out of `websocketServer.clients` (ws's public
    // set), no broadcast of the application reaches it and its preClose leaves it to this plugin's drain.
    wsHandler: (socket, request) => {
      const appServer = (fastify as { websocketServer?: { clients?: Set<WebSocket> } }).websocketServer
      appServer?.clients?.delete(socket)
      const upgraded = router.upgradeOf(request.raw)?.socket ?? request.raw.socket
      router.accept(upgraded)
      openSession(socket, upgraded, request, onAppSocketError)
    },
  }
  fastify.route(route)
}

export const triviumWebSocketPlugin = fp(triviumWebSocket, {
  fastify: '^5.12.1',
  name: '@trivium/websocket',
  dependencies: ['@trivium/core'],
  decorators: { fastify: ['trivium'] },
})
export { triviumWebSocketPlugin as triviumWebSocket }
export default triviumWebSocketPlugin
