// The sessions of one frame transport server: connection caps, the push hub, the tick timer, and a
// shutdown that every frame transport of the app runs in parallel, inside Fastify's pluginTimeout.
import { channel } from 'node:diagnostics_channel'
import { ServiceUnavailableException, TRIVIUM_CHANNELS, type Trivium, type TriviumError } from '@trivium/core'
import { SessionHub } from '@trivium/wire/sessions'
import type { FastifyInstance } from 'fastify'
import type { ResolvedFrameSessionOptions } from './options.js'
import { InjectBridge } from './route-bridge.js'
import { type FrameSession, type SessionContext, SHUTDOWN_MESSAGE } from './session.js'
import { SETUP } from './setup-errors.js'
import type { UnaryBridge } from './unary.js'

const connectionChannel = channel(TRIVIUM_CHANNELS.connection)
/**
 * Fastify decorator holding every frame server of the app (so one close drains them all at once).
 * `Symbol.for`: the WebSocket and TCP packages may each resolve their own copy of this module.
 */
const SERVERS: unique symbol = Symbol.for('trivium.frameServers')

export interface FrameServers {
  servers: FrameServer[]
  shutdown: Promise<void> | undefined
  /** The one bridge of named Fastify routes, shared by every frame transport of the app. */
  routes: UnaryBridge
}

declare module 'fastify' {
  interface FastifyInstance {
    [SERVERS]?: FrameServers
  }
}

export const TOO_MANY_CONNECTIONS = 'Too many connections'
export const TOO_MANY_FROM_ADDRESS = 'Too many connections from this address'

export class FrameServer implements SessionContext {
  readonly sessions = new Set<FrameSession>()
  readonly hub: SessionHub
  readonly trivium: Trivium
  readonly shutdownError: TriviumError = new ServiceUnavailableException(SHUTDOWN_MESSAGE)
  /** Open sessions by address (`clientIp`, which a session never changes: no map of its own per session). */
  readonly #perIp = new Map<string, number>()
  readonly #registry: FrameServers
  /** Named Fastify routes (`config.triviumRoute.name`): their calls go through the route itself. */
  readonly routes: UnaryBridge
  #shuttingDown = false
  #timer: NodeJS.Timeout | undefined

  constructor(
    readonly fastify: FastifyInstance,
    readonly transport: 'websocket' | 'tcp',
    readonly options: ResolvedFrameSessionOptions,
    readonly bridge: UnaryBridge | undefined = undefined,
  ) {
    this.trivium = fastify.trivium
    this.hub = pushHub(fastify, options, transport)
    let registry = fastify[SERVERS]
    if (registry === undefined) {
      registry = {
        servers: [],
        shutdown: undefined,
        routes: new InjectBridge(fastify, { markRequests: false }),
      }
      fastify.decorate(SERVERS, registry)
    }
    this.#registry = registry
    this.routes = registry.routes
    registry.servers.push(this)
  }

  isShuttingDown(): boolean {
    return this.#shuttingDown
  }

  /** Why a new connection from `clientIp` is refused, or undefined to accept it. */
  refusal(clientIp: string | undefined): TriviumError | undefined {
    if (this.#shuttingDown) return this.shutdownError
    if (this.sessions.size >= this.options.maxConnections) {
      return new ServiceUnavailableException(TOO_MANY_CONNECTIONS)
    }
    if ((this.#perIp.get(clientIp ?? 'unknown') ?? 0) >= this.options.maxConnectionsPerIp) {
      return new ServiceUnavailableException(TOO_MANY_FROM_ADDRESS)
    }
    return undefined
  }

  add(session: FrameSession): void {
    const ip = session.clientIp ?? 'unknown'
    this.sessions.add(session)
    this.#perIp.set(ip, (this.#perIp.get(ip) ?? 0) + 1)
    this.hub.add(session)
    if (connectionChannel.hasSubscribers)
      connectionChannel.publish({ transport: this.transport, event: 'open' })
  }

  onClosed(session: FrameSession): void {
    if (!this.sessions.delete(session)) return
    const ip = session.clientIp ?? 'unknown'
    const n = (this.#perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.#perIp.delete(ip)
    else this.#perIp.set(ip, n)
    if (connectionChannel.hasSubscribers)
      connectionChannel.publish({ transport: this.transport, event: 'close' })
  }

  /** Starts the idle/liveness timer (at `onReady`, for every transport alike). */
  start(tickMs: number): void {
    if (this.#timer) return
    this.#timer = setInterval(() => {
      const now = Date.now()
      for (const session of this.sessions) {
        try {
          session.tick(now)
        } catch (err) {
          session.log.error({ err }, 'frame session tick failed')
        }
      }
    }, tickMs)
    this.#timer.unref()
  }

  /**
   * Drains every frame server of the app in parallel (one shared promise): whichever transport's
   * close hook runs first starts them all, the others wait for the same drain.
   */
  shutdownAll(): Promise<void> {
    const registry = this.#registry
    registry.shutdown ??= Promise.all(registry.servers.map((s) => s.#shutdown())).then(() => undefined)
    return registry.shutdown
  }

  async #shutdown(): Promise<void> {
    this.#shuttingDown = true
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = undefined
    await Promise.all([...this.sessions].map((s) => s.goAway(this.options.shutdownGraceMs)))
  }
}

/**
 * `fastify.push`, shared by every frame transport: made by the first one registered, with its bus.
 * A later transport given another bus would silently not use it, so it is refused.
 */
function pushHub(
  fastify: FastifyInstance,
  options: ResolvedFrameSessionOptions,
  transport: string,
): SessionHub {
  if (fastify.hasDecorator('push')) {
    const hub = fastify.push
    if (options.bus !== undefined && hubBus.get(hub) !== options.bus) {
      throw SETUP.TRV_FRAME_SESSION_PUSH_BUS(transport)
    }
    return hub
  }
  const hub = new SessionHub(options.bus)
  hubBus.set(hub, options.bus)
  fastify.decorate('push', hub)
  // HTTP event streams register here too: one `closeSessions` ends a token's sessions on every transport.
  fastify.trivium.sessionHub = hub
  fastify.addHook('onClose', async () => hub.close())
  return hub
}
const hubBus = new WeakMap<SessionHub, unknown>()

declare module 'fastify' {
  interface FastifyInstance {
    /** Server push and session control, shared by @trivium/websocket and @trivium/tcp. */
    push: SessionHub
  }
}
