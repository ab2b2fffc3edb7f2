// Options every frame transport shares, resolved once: `@trivium/websocket` and `@trivium/tcp` add
// only their own (path, port, framing limits) on top.
import { optionNames, resolveShutdownGrace } from '@trivium/core/internal'
import { DEFAULT_COMPRESSION_THRESHOLD } from '@trivium/wire'
import type { PubSubBus } from '@trivium/wire/sessions'
import { SETUP } from './setup-errors.js'

export interface FrameSessionOptions {
  /** Calls and streams running per connection (default 64); more get ERROR 429 for that request id. */
  maxInFlight?: number
  /** Open connections on this server (default 10 000); more are refused. */
  maxConnections?: number
  /** Open connections from one client address (default 100); more are refused. */
  maxConnectionsPerIp?: number
  /** Nothing in flight and no frame received for this long → the connection is closed (default 5 min). */
  idleTimeoutMs?: number
  /** Stream items wait while more than this many bytes are queued for the socket (default 1 MiB). */
  highWaterMark?: number
  /** A connection whose queued bytes exceed this when a push arrives is closed (default 4 MiB). */
  maxPushBacklog?: number
  /** Client and bidirectional streams open per connection (default 16); more get ERROR 429. */
  maxClientStreams?: number
  /**
   * Request bytes a client may send ahead of the handler on one stream (default 256 KiB): the credit
   * window. At most the window plus one frame is buffered per stream (PROTOCOL.md "Client and
   * bidirectional streams").
   */
  clientStreamWindowBytes?: number
  /**
   * How long `app.close()` waits for unary calls in flight before aborting them and closing (default:
   * 3 s, and never more than 30% of Fastify's `pluginTimeout`, so close resolves well inside it).
   */
  shutdownGraceMs?: number
  /**
   * Pub/sub bus for push between instances (default in-memory). The first frame transport registered
   * creates `fastify.push` with it; a later transport given a different bus is refused.
   */
  bus?: PubSubBus
  /**
   * Compressed frames (PROTOCOL.md "Compression", the type byte's 0x80 flag): `true` or `{ threshold }`
   * (bytes, default 1024). Default off: a client's offer is answered with a plain PONG. TCP takes it;
   * WebSocket's options type refuses it (`perMessageDeflate` there).
   */
  compression?: boolean | { threshold?: number }
  /** May a connection subscribe to a topic? Default: any topic. */
  authorizeSubscribe?: (
    topic: string,
    session: { userId: string | undefined; id: string },
  ) => boolean | Promise<boolean>
}

export interface ResolvedFrameSessionOptions {
  maxInFlight: number
  maxConnections: number
  maxConnectionsPerIp: number
  idleTimeoutMs: number
  highWaterMark: number
  maxPushBacklog: number
  maxClientStreams: number
  clientStreamWindowBytes: number
  shutdownGraceMs: number
  bus: PubSubBus | undefined
  authorizeSubscribe: FrameSessionOptions['authorizeSubscribe']
  /** Frames with a body of at least this many bytes are sent compressed to a peer that offered; undefined: off. */
  compressionThreshold: number | undefined
}

/** Default smallest body sent compressed (one rule for every side: @trivium/wire). */
export { DEFAULT_COMPRESSION_THRESHOLD }

function compressionThreshold(pkg: string, value: unknown): number | undefined {
  if (value === undefined || value === false) return undefined
  if (value === true) return DEFAULT_COMPRESSION_THRESHOLD
  if (typeof value === 'object' && value !== null) {
    const threshold = (value as { threshold?: unknown }).threshold ?? DEFAULT_COMPRESSION_THRESHOLD
    if (typeof threshold === 'number' && Number.isInteger(threshold) && threshold >= 0) return threshold
  }
  throw SETUP.TRV_FRAME_SESSION_COMPRESSION(pkg, value)
}

// One grace for every transport: core's HTTP drain resolves the same option the same way.
export { defaultShutdownGrace } from '@trivium/core/internal'

/** A validator for one package: `int('maxInFlight', value, 64)` throws `<pkg>: maxInFlight must be …`. */
export function integerOption(pkg: string) {
  return (name: string, value: unknown, fallback: number, min = 1): number => {
    const v = value ?? fallback
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
      throw SETUP.TRV_FRAME_SESSION_INTEGER(pkg, name, min, v)
    }
    return v
  }
}

/**
 * Validates the shared options. `pkg` prefixes error messages; `pluginTimeout` is Fastify's, so the
 * shutdown grace can be checked against it.
 */
export function resolveFrameSessionOptions(
  pkg: string,
  options: FrameSessionOptions,
  pluginTimeout: number,
): ResolvedFrameSessionOptions {
  const int = integerOption(pkg)
  const bus = options.bus
  if (bus !== undefined && (typeof bus?.publish !== 'function' || typeof bus?.subscribe !== 'function')) {
    throw SETUP.TRV_FRAME_SESSION_BUS(pkg)
  }
  if (options.authorizeSubscribe !== undefined && typeof options.authorizeSubscribe !== 'function') {
    throw SETUP.TRV_FRAME_SESSION_AUTHORIZE_SUBSCRIBE(pkg)
  }
  const shutdownGraceMs = resolveShutdownGrace(pkg, options.shutdownGraceMs, pluginTimeout)
  return {
    maxInFlight: int('maxInFlight', options.maxInFlight, 64),
    maxConnections: int('maxConnections', options.maxConnections, 10_000),
    maxConnectionsPerIp: int('maxConnectionsPerIp', options.maxConnectionsPerIp, 100),
    idleTimeoutMs: int('idleTimeoutMs', options.idleTimeoutMs, 300_000),
    highWaterMark: int('highWaterMark', options.highWaterMark, 1024 * 1024),
    maxPushBacklog: int('maxPushBacklog', options.maxPushBacklog, 4 * 1024 * 1024),
    maxClientStreams: int('maxClientStreams', options.maxClientStreams, 16),
    clientStreamWindowBytes: int('clientStreamWindowBytes', options.clientStreamWindowBytes, 256 * 1024),
    shutdownGraceMs,
    bus,
    authorizeSubscribe: options.authorizeSubscribe,
    compressionThreshold: compressionThreshold(pkg, options.compression),
  }
}

/** The option names every frame transport shares (each adds its own: an unknown name is refused). */
export const FRAME_SESSION_OPTIONS = optionNames<FrameSessionOptions>()(
  'maxInFlight',
  'maxConnections',
  'maxConnectionsPerIp',
  'idleTimeoutMs',
  'highWaterMark',
  'maxPushBacklog',
  'maxClientStreams',
  'clientStreamWindowBytes',
  'shutdownGraceMs',
  'bus',
  'compression',
  'authorizeSubscribe',
)
