// @trivium/websocket — every Trivium endpoint over one binary WebSocket per client (PROTOCOL.md
// "WebSocket"), with streaming, server push, limits and graceful shutdown.
import websocket from '@fastify/websocket'
import {
  jsonFormat,
  normalizeError,
  ServiceUnavailableException,
  toErrorBody,
  UnsupportedMediaTypeException,
  type WireFormat,
} from '@trivium/core'
import { SessionHub } from '@trivium/wire/sessions'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { WebSocket } from 'ws'
import { Connection, type ConnectionContext, SHUTDOWN_MESSAGE } from './connection.js'
import { type ConnectionIdentity, resolveOptions, type TriviumWebSocketOptions } from './options.js'

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

export interface TriviumWebSocketServer {
  /** Open connections. */
  readonly connections: number
  /** Closes matching sessions (token id, `{ userId }`, `{ tokenId }` or predicate) with code 4001. */
  closeSessions: SessionHub['closeSessions']
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Server push and session control, shared by @trivium/websocket and @trivium/tcp. */
    push: SessionHub
    triviumWebSocket: TriviumWebSocketServer
  }
}

let connectionCounter = 0

function sendUpgradeError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { error, internal } = normalizeError(err)
  if (internal) request.log.error({ err }, 'websocket upgrade failed')
  return reply
    .code(error.statusCode)
    .type('application/json; charset=utf-8')
    .send(toErrorBody(error, request.id))
}

const triviumWebSocket: FastifyPluginAsync<TriviumWebSocketOptions> = async (
  fastify: FastifyInstance,
  raw,
) => {
  const options = resolveOptions(raw ?? {}, fastify.trivium.bodyLimit)
  if (!fastify.hasDecorator('push')) {
    const hub = new SessionHub(options.bus)
    fastify.decorate('push', hub)
    fastify.addHook('onClose', async () => hub.close())
  }
  const hub = fastify.push
  const connections = new Set<Connection>()
  const formats = new WeakMap<FastifyRequest, WireFormat>()
  const identities = new WeakMap<FastifyRequest, ConnectionIdentity>()
  let shuttingDown = false

  const ctx: ConnectionContext = {
    trivium: fastify.trivium,
    hub,
    options,
    isShuttingDown: () => shuttingDown,
    shutdownError: new ServiceUnavailableException(SHUTDOWN_MESSAGE),
    onClosed: (c) => connections.delete(c),
  }

  async function shutdown(): Promise<void> {
    shuttingDown = true
    // While closing, Fastify answers every request 503 on the raw response, and for an upgrade
    // request nothing then closes the socket: a client that keeps it open would hold server.close()
    // forever. No upgrade is accepted from now on, so end those sockets once the answer is written.
    fastify.server.on('upgrade', (_request, socket) => {
      socket.end()
      setTimeout(() => socket.destroy(), 1000).unref()
    })
    clearInterval(timer)
    await Promise.all([...connections].map((c) => c.goAway(options.shutdownGraceMs)))
  }

  if (fastify.hasDecorator('websocketServer')) {
    // @fastify/websocket registered by the application: its preClose closes clients first, so drain here.
    fastify.addHook('preClose', shutdown)
  } else {
    await fastify.register(websocket, {
      options: { maxPayload: options.maxPayload },
      preClose: async function preClose(this: FastifyInstance) {
        await shutdown()
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

  const tickMs = Math.max(10, Math.min(options.pingIntervalMs, Math.ceil(options.idleTimeoutMs / 4)))
  const timer = setInterval(() => {
    const now = Date.now()
    for (const c of connections) {
      try {
        c.tick(now)
      } catch (err) {
        c.log.error({ err }, 'websocket tick failed')
      }
    }
  }, tickMs)
  timer.unref()
  fastify.addHook('onClose', async () => clearInterval(timer))

  fastify.decorate('triviumWebSocket', {
    get connections() {
      return connections.size
    },
    closeSessions: (match, reason) => hub.closeSessions(match, reason),
  } satisfies TriviumWebSocketServer)

  fastify.get(
    options.path,
    {
      websocket: true,
      onRequest: async (request, reply) => {
        if (shuttingDown)
          return sendUpgradeError(new ServiceUnavailableException(SHUTDOWN_MESSAGE), request, reply)
        if (connections.size >= options.maxConnections) {
          return sendUpgradeError(new ServiceUnavailableException('Too many connections'), request, reply)
        }
        const query = request.query as Record<string, unknown>
        const requested = query.format
        let format: WireFormat | undefined
        if (requested === undefined) format = fastify.trivium.formats.get('binary') ?? jsonFormat
        else if (typeof requested === 'string') format = fastify.trivium.formats.get(requested)
        if (!format) {
          return sendUpgradeError(
            new UnsupportedMediaTypeException(`Unsupported format: ${String(requested)}`),
            request,
            reply,
          )
        }
        formats.set(request, format)
        if (options.identify) {
          try {
            const identity = await options.identify(request)
            if (identity) identities.set(request, identity)
          } catch (err) {
            return sendUpgradeError(err, request, reply)
          }
        }
        return undefined
      },
    },
    (socket: WebSocket, request: FastifyRequest) => {
      try {
        const format = formats.get(request) ?? jsonFormat
        const id = `w${(++connectionCounter).toString(36)}`
        const connection = new Connection(id, socket, request, format, ctx)
        connections.add(connection)
        hub.add(connection)
        const identity = identities.get(request)
        if (identity) connection.identify(identity)
      } catch (err) {
        request.log.error({ err }, 'websocket connection setup failed')
        socket.close(1011, 'Internal server error')
      }
    },
  )
}

export const triviumWebSocketPlugin = fp(triviumWebSocket, {
  fastify: '5.x',
  name: '@trivium/websocket',
  dependencies: ['@trivium/core'],
})
export { triviumWebSocketPlugin as triviumWebSocket }
export default triviumWebSocketPlugin
