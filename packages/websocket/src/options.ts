import type { PubSubBus } from '@trivium/wire/sessions'
import type { FastifyRequest } from 'fastify'

/** Who a connection is, as an `identify` hook finds it from the upgrade request. */
export interface ConnectionIdentity {
  userId: string | number
  /** Token id (`jti`): `closeSessions(jti)` closes the connection. */
  tokenId?: string
  /** When the token expires (ms since epoch): the connection is closed then (code 4001). */
  expiresAt?: number
}

export interface TriviumWebSocketOptions {
  /** Route of the WebSocket endpoint (default `/ws`). */
  path?: string
  /** Largest message (frame) in bytes; larger closes with 1009. Default: core's bodyLimit + 1 KiB. */
  maxPayload?: number
  /** Calls and streams in flight per connection (default 64); more get an ERROR frame (429). */
  maxInFlight?: number
  /** Open connections on this server (default 10000); more are refused with HTTP 503 at upgrade. */
  maxConnections?: number
  /** Protocol-level ping period (default 30 s); a client that missed the previous pong is terminated. */
  pingIntervalMs?: number
  /** A connection with nothing in flight and no frame received for this long is closed 4000 (default 5 min). */
  idleTimeoutMs?: number
  /** Stream items wait while the socket has more than this many bytes queued (default 1 MiB). */
  highWaterMark?: number
  /** A connection whose queued push bytes exceed this is closed 4002 (default 4 MiB). */
  maxPushBacklog?: number
  /** How long `app.close()` waits for in-flight unary calls before closing (default 10 s). */
  shutdownGraceMs?: number
  /** Pub/sub bus for push between instances (default in-memory). Ignored when `fastify.push` already exists. */
  bus?: PubSubBus
  /** Finds who a connection is at upgrade time (e.g. verify the token with @trivium/auth). */
  identify?: (
    request: FastifyRequest,
  ) => ConnectionIdentity | undefined | Promise<ConnectionIdentity | undefined>
  /** May a connection subscribe to a topic? Default: any topic. */
  authorizeSubscribe?: (
    topic: string,
    session: { userId: string | undefined; id: string },
  ) => boolean | Promise<boolean>
}

export interface ResolvedOptions {
  path: string
  maxPayload: number
  maxInFlight: number
  maxConnections: number
  pingIntervalMs: number
  idleTimeoutMs: number
  highWaterMark: number
  maxPushBacklog: number
  shutdownGraceMs: number
  bus: PubSubBus | undefined
  identify: TriviumWebSocketOptions['identify']
  authorizeSubscribe: TriviumWebSocketOptions['authorizeSubscribe']
}

function positiveInt(name: string, value: unknown, fallback: number): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new TypeError(`@trivium/websocket: ${name} must be a positive integer`)
  }
  return v
}

export function resolveOptions(options: TriviumWebSocketOptions, bodyLimit: number): ResolvedOptions {
  const path = options.path ?? '/ws'
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError('@trivium/websocket: path must be a string starting with "/"')
  }
  for (const fn of ['identify', 'authorizeSubscribe'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function') {
      throw new TypeError(`@trivium/websocket: ${fn} must be a function`)
    }
  }
  const bus = options.bus
  if (bus !== undefined && (typeof bus.publish !== 'function' || typeof bus.subscribe !== 'function')) {
    throw new TypeError('@trivium/websocket: bus must have publish and subscribe methods')
  }
  return {
    path,
    maxPayload: positiveInt('maxPayload', options.maxPayload, bodyLimit + 1024),
    maxInFlight: positiveInt('maxInFlight', options.maxInFlight, 64),
    maxConnections: positiveInt('maxConnections', options.maxConnections, 10_000),
    pingIntervalMs: positiveInt('pingIntervalMs', options.pingIntervalMs, 30_000),
    idleTimeoutMs: positiveInt('idleTimeoutMs', options.idleTimeoutMs, 300_000),
    highWaterMark: positiveInt('highWaterMark', options.highWaterMark, 1024 * 1024),
    maxPushBacklog: positiveInt('maxPushBacklog', options.maxPushBacklog, 4 * 1024 * 1024),
    shutdownGraceMs: positiveInt('shutdownGraceMs', options.shutdownGraceMs, 10_000),
    bus,
    identify: options.identify,
    authorizeSubscribe: options.authorizeSubscribe,
  }
}
