// Who routes a WebSocket upgrade through Fastify (issue 40 item 2: a guest leaves the application's
// WebSocket routes as they were). Node hands an upgrade request to the server's 'upgrade' listeners,
// not to Fastify. An application's @fastify/websocket listens for every upgrade and routes it through
// Fastify itself; a second router would run every upgrade twice. So Trivium routes an upgrade only
// when no other 'upgrade' listener is on the server at that moment, and never registers
// @fastify/websocket (an application may register it before or after Trivium).
// Documented surfaces only: Node's 'upgrade' event and `prependListener`, `new ServerResponse(req)` with
// `assignSocket`/`detachSocket` (as Node's server, @fastify/websocket and @trivium/tcp's inject mode bind
// theirs), and `fastify.routing(req, res)`.
import { type IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'

interface Upgrade {
  readonly socket: Duplex
  readonly head: Buffer
  /** Routed by Trivium: the application has no WebSocket server of its own. */
  readonly routedByTrivium: boolean
}

function destroyOnError(this: Duplex): void {
  this.destroy()
}

export class UpgradeRouter {
  readonly #upgrades = new WeakMap<IncomingMessage, Upgrade>()
  /**
   * What binds a routed upgrade's socket to its HTTP exchange until it is accepted: the response (and
   * through it the request, Fastify's request and reply) and the early-end guard. Released at accept,
   * so an open WebSocket holds none of them (bench/density).
   */
  readonly #routing = new WeakMap<Duplex, { response: ServerResponse; onEnd: () => void }>()
  readonly #listener = (request: IncomingMessage, socket: Duplex, head: Buffer): void =>
    this.#onUpgrade(request, socket, head)

  constructor(private readonly fastify: FastifyInstance) {
    // First, so the head and socket are known before another listener routes the request.
    fastify.server.prependListener('upgrade', this.#listener)
  }

  /** The socket and head of a request that came as an upgrade (`undefined`: an ordinary request, or inject). */
  upgradeOf(request: IncomingMessage): Upgrade | undefined {
    return this.#upgrades.get(request)
  }

  /**
   * ws takes the socket over (its own error listener included): no longer closed here. The early-end
   * guard is removed, not told (a set of accepted sockets held an entry per open connection: bench/density).
   */
  accept(socket: Duplex): void {
    socket.removeListener('error', destroyOnError)
    const routing = this.#routing.get(socket)
    if (routing === undefined) return
    this.#routing.delete(socket)
    socket.removeListener('end', routing.onEnd)
    // The response was hijacked and never answers: unbound, it is garbage with the request.
    if (routing.response.socket === socket) routing.response.detachSocket(socket as never)
  }

  #onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const routedByTrivium = !this.fastify.server.listeners('upgrade').some((l) => l !== this.#listener)
    this.#upgrades.set(request, { socket, head, routedByTrivium })
    if (!routedByTrivium) return // the application's @fastify/websocket routes it, and guards its socket
    // Node removed its own error listener before the event: a reset while the hooks run ends this socket only.
    socket.on('error', destroyOnError)
    // A client that ends its side before an upgrade is accepted gets its socket closed (`accept`
    // removes this listener).
    const onEnd = (): void => {
      socket.destroy()
    }
    socket.once('end', onEnd)
    const response = new ServerResponse(request)
    response.assignSocket(socket as never)
    this.#routing.set(socket, { response, onEnd })
    // Answered over HTTP (a refusal, an earlier hook's answer, Fastify's own 400/503 below the routes):
    // Node no longer manages this socket, so close it once the answer is out.
    response.once('finish', () => {
      socket.end()
      setTimeout(() => socket.destroy(), 1000).unref()
    })
    try {
      this.fastify.routing(request, response)
    } catch (err) {
      this.fastify.log.warn({ err }, 'websocket upgrade failed')
      socket.destroy()
    }
  }
}

const routers = new WeakMap<object, UpgradeRouter>()

/** One router per HTTP server, shared by every @trivium/websocket registered on it. */
export function upgradeRouter(fastify: FastifyInstance): UpgradeRouter {
  let router = routers.get(fastify.server)
  if (!router) {
    router = new UpgradeRouter(fastify)
    routers.set(fastify.server, router)
  }
  return router
}
