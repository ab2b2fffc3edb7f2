import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import {
  type ConnectionIdentity,
  FRAME_SESSION_OPTIONS,
  type FrameSessionOptions,
  integerOption,
  type ResolvedFrameSessionOptions,
  resolveFrameSessionOptions,
} from '@trivium/frame-session'
import { DEFAULT_COMPRESSION_THRESHOLD } from '@trivium/wire'
import type { FastifyRequest } from 'fastify'
import { SETUP } from './setup-errors.js'

export type { ConnectionIdentity }

/** The frame session's options as WebSocket takes them: its compression is permessage-deflate, not the 0x80 frame flag. */
export interface TriviumWebSocketOptions extends Omit<FrameSessionOptions, 'compression'> {
  /**
   * Not on WebSocket (refused at registration): frame compression is TCP's; WebSocket compresses whole
   * messages with `perMessageDeflate` (PROTOCOL.md "Compression").
   */
  compression?: never
  /** Route of the WebSocket endpoint (default `/ws`). */
  path?: string
  /** Largest message (frame) in bytes; larger closes with 1009. Default: core's bodyLimit + 1 KiB. */
  maxPayload?: number
  /**
   * permessage-deflate (RFC 7692, done by ws): `true` or `{ threshold }` (bytes; smaller messages go
   * plain; default 1024). Default off. `maxPayload` bounds the inflated message (1009 past it).
   */
  perMessageDeflate?: boolean | { threshold?: number }
  /** Protocol-level ping period (default 30 s); a client that missed the previous pong is terminated. */
  pingIntervalMs?: number
  /** Finds who a connection is at upgrade time (e.g. verify the token with @trivium/auth). */
  identify?: (
    request: FastifyRequest,
  ) => ConnectionIdentity | undefined | Promise<ConnectionIdentity | undefined>
  /**
   * Which pages may open a WebSocket, by their `Origin` header (browsers always send it on an upgrade).
   * Default: a request without `Origin` (not a browser) or whose Origin's host is the request's Host.
   * Give a function (e.g. `@trivium/protections`' `originMatcher(corsOrigins)`) to allow others.
   * Refused → 403 `Origin not allowed`.
   */
  allowOrigin?: (origin: string, request: FastifyRequest) => boolean
}

export interface ResolvedOptions extends ResolvedFrameSessionOptions {
  path: string
  maxPayload: number
  pingIntervalMs: number
  /** ws's `perMessageDeflate` option, or false. */
  perMessageDeflate: false | { threshold: number }
  identify: TriviumWebSocketOptions['identify']
  allowOrigin: TriviumWebSocketOptions['allowOrigin']
}

const PKG = '@trivium/websocket'

/** Every option name of the plugin: any other is refused with the nearest one named. */
const WEBSOCKET_OPTIONS = [
  ...FRAME_SESSION_OPTIONS,
  ...optionNames<Omit<TriviumWebSocketOptions, keyof FrameSessionOptions>>()(
    'path',
    'maxPayload',
    'perMessageDeflate',
    'pingIntervalMs',
    'identify',
    'allowOrigin',
  ),
]

export function resolveOptions(
  options: TriviumWebSocketOptions,
  bodyLimit: number,
  pluginTimeout: number,
): ResolvedOptions {
  refuseUnknownOptions(PKG, options, WEBSOCKET_OPTIONS)
  const path = options.path ?? '/ws'
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw SETUP.TRV_WEBSOCKET_PATH()
  }
  for (const fn of ['identify', 'allowOrigin'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function') {
      throw SETUP.TRV_WEBSOCKET_FUNCTION(fn)
    }
  }
  if (options.compression !== undefined) {
    throw SETUP.TRV_WEBSOCKET_COMPRESSION()
  }
  const int = integerOption(PKG)
  const deflate = options.perMessageDeflate ?? false
  let perMessageDeflate: ResolvedOptions['perMessageDeflate'] = false
  if (deflate === true) perMessageDeflate = { threshold: DEFAULT_COMPRESSION_THRESHOLD }
  else if (typeof deflate === 'object' && deflate !== null)
    perMessageDeflate = {
      threshold: int('perMessageDeflate.threshold', deflate.threshold, DEFAULT_COMPRESSION_THRESHOLD, 0),
    }
  else if (deflate !== false) throw SETUP.TRV_WEBSOCKET_PER_MESSAGE_DEFLATE()
  return {
    ...resolveFrameSessionOptions(PKG, options, pluginTimeout),
    path,
    maxPayload: int('maxPayload', options.maxPayload, bodyLimit + 1024),
    pingIntervalMs: int('pingIntervalMs', options.pingIntervalMs, 30_000),
    perMessageDeflate,
    identify: options.identify,
    allowOrigin: options.allowOrigin,
  }
}
