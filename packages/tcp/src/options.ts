import type { TlsOptions } from 'node:tls'
import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import {
  FRAME_SESSION_OPTIONS,
  type FrameSessionOptions,
  integerOption,
  type ResolvedFrameSessionOptions,
  resolveFrameSessionOptions,
} from '@trivium/frame-session'
import { SETUP } from './setup-errors.js'

export interface TriviumTcpOptions extends FrameSessionOptions {
  /** Port of the TCP server (default 0: a random port, see `fastify.triviumTcp.address()`). */
  port?: number
  /** Interface to bind (default `127.0.0.1`). */
  host?: string
  /**
   * `direct` (default): frames go to core's pipeline (`trivium.invoke`), like WebSocket.
   * `inject`: each unary REQUEST runs through the endpoint's Fastify route, so every Fastify hook of
   * the application runs too. Streams use the direct pipeline in both modes.
   */
  mode?: 'direct' | 'inject'
  /** Largest frame (the length field's value). Default: core's bodyLimit + 1 KiB. */
  maxFrameBytes?: number
  /** A frame started but not completed within this time → ERROR frame and close (default 10 s). */
  partialFrameTimeoutMs?: number
  /** Serve TLS (`node:tls` server options: key, cert, …) instead of plain TCP. */
  tls?: TlsOptions
}

export interface ResolvedTcpOptions extends ResolvedFrameSessionOptions {
  port: number
  host: string
  mode: 'direct' | 'inject'
  maxFrameBytes: number
  partialFrameTimeoutMs: number
  tls: TlsOptions | undefined
}

const PKG = '@trivium/tcp'

/** Every option name of the plugin: any other is refused with the nearest one named. */
const TCP_OPTIONS = [
  ...FRAME_SESSION_OPTIONS,
  ...optionNames<Omit<TriviumTcpOptions, keyof FrameSessionOptions>>()(
    'port',
    'host',
    'mode',
    'maxFrameBytes',
    'partialFrameTimeoutMs',
    'tls',
  ),
]

export function resolveTcpOptions(
  o: TriviumTcpOptions,
  bodyLimit: number,
  pluginTimeout: number,
): ResolvedTcpOptions {
  refuseUnknownOptions(PKG, o, TCP_OPTIONS)
  const mode = o.mode ?? 'direct'
  if (mode !== 'direct' && mode !== 'inject') throw SETUP.TRV_TCP_MODE()
  const host = o.host ?? '127.0.0.1'
  if (typeof host !== 'string') throw SETUP.TRV_TCP_HOST()
  if (o.tls !== undefined && (typeof o.tls !== 'object' || o.tls === null)) {
    throw SETUP.TRV_TCP_TLS()
  }
  const int = integerOption(PKG)
  const port = int('port', o.port, 0, 0)
  if (port > 65535) throw SETUP.TRV_TCP_PORT()
  return {
    ...resolveFrameSessionOptions(PKG, o, pluginTimeout),
    port,
    host,
    mode,
    maxFrameBytes: int('maxFrameBytes', o.maxFrameBytes, bodyLimit + 1024, 5),
    partialFrameTimeoutMs: int('partialFrameTimeoutMs', o.partialFrameTimeoutMs, 10_000),
    tls: o.tls,
  }
}
