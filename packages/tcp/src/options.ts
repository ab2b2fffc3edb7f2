import type { TlsOptions } from 'node:tls'

export interface TriviumTcpOptions {
  /** Port of the TCP server (default 0: a random port, see `fastify.triviumTcp.address()`). */
  port?: number
  /** Interface to bind (default `127.0.0.1`). */
  host?: string
  /**
   * `direct` (default): frames go to core's pipeline (`trivium.invoke`), like WebSocket.
   * `inject`: each unary REQUEST becomes an `app.inject()` on the endpoint's route, so every Fastify
   * hook runs too. Streams use the direct pipeline in both modes.
   */
  mode?: 'direct' | 'inject'
  /** Largest frame (the length field's value). Default: core's bodyLimit + 1 KiB. */
  maxFrameBytes?: number
  /** Open connections on this server (default 10000). */
  maxConnections?: number
  /** Open connections from one address (default 100). */
  maxConnectionsPerIp?: number
  /** Nothing in flight and no byte received for this long → the connection is closed (default 5 min). */
  idleTimeoutMs?: number
  /** A frame started but not completed within this time → ERROR frame and close (default 10 s). */
  partialFrameTimeoutMs?: number
  /** Calls and streams in flight per connection (default 64). */
  maxInFlight?: number
  /** Stream items wait while more than this many bytes are queued for the socket (default 1 MiB). */
  highWaterMark?: number
  /** A connection whose queued bytes exceed this when a push arrives is closed (default 4 MiB). */
  maxPushBacklog?: number
  /** How long `app.close()` waits for in-flight unary calls (default 10 s). */
  shutdownGraceMs?: number
  /** Serve TLS (`node:tls` server options: key, cert, …) instead of plain TCP. */
  tls?: TlsOptions
}

export type ResolvedTcpOptions = Required<Omit<TriviumTcpOptions, 'tls'>> & { tls: TlsOptions | undefined }

function int(name: string, value: unknown, fallback: number, min = 1): number {
  const v = value ?? fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new TypeError(`@trivium/tcp: ${name} must be an integer of at least ${min}`)
  }
  return v
}

export function resolveTcpOptions(o: TriviumTcpOptions, bodyLimit: number): ResolvedTcpOptions {
  const mode = o.mode ?? 'direct'
  if (mode !== 'direct' && mode !== 'inject')
    throw new TypeError('@trivium/tcp: mode must be "direct" or "inject"')
  const host = o.host ?? '127.0.0.1'
  if (typeof host !== 'string') throw new TypeError('@trivium/tcp: host must be a string')
  if (o.tls !== undefined && (typeof o.tls !== 'object' || o.tls === null)) {
    throw new TypeError('@trivium/tcp: tls must be an object of node:tls server options')
  }
  const port = int('port', o.port, 0, 0)
  if (port > 65535) throw new TypeError('@trivium/tcp: port must be at most 65535')
  return {
    port,
    host,
    mode,
    maxFrameBytes: int('maxFrameBytes', o.maxFrameBytes, bodyLimit + 1024, 5),
    maxConnections: int('maxConnections', o.maxConnections, 10_000),
    maxConnectionsPerIp: int('maxConnectionsPerIp', o.maxConnectionsPerIp, 100),
    idleTimeoutMs: int('idleTimeoutMs', o.idleTimeoutMs, 300_000),
    partialFrameTimeoutMs: int('partialFrameTimeoutMs', o.partialFrameTimeoutMs, 10_000),
    maxInFlight: int('maxInFlight', o.maxInFlight, 64),
    highWaterMark: int('highWaterMark', o.highWaterMark, 1024 * 1024),
    maxPushBacklog: int('maxPushBacklog', o.maxPushBacklog, 4 * 1024 * 1024),
    shutdownGraceMs: int('shutdownGraceMs', o.shutdownGraceMs, 10_000),
    tls: o.tls,
  }
}
