// @trivium/client/node — the Node entry: everything of the browser entry, plus the TCP transport, an
// undici connection pool for HTTP (pool size, keep-alive timeout, max requests per connection) and the
// `ws` package as the WebSocket implementation (Node 20 has no global WebSocket).
import type { Contract } from '@trivium/contract'
import { Agent, fetch as undiciFetch } from 'undici'
import WebSocket from 'ws'
import { checkNonNegative, optionError } from './base.js'
import type { ContractClient } from './contract.js'
import { type FetchLike, HttpClient, type HttpClientOptions, type HttpInternals } from './http.js'
import { type Http2ClientOptions, Http2StreamingClient } from './http2.js'
import { TcpClient, type TcpClientOptions } from './tcp.js'
import type { TriviumClient } from './types.js'
import { WebSocketClient, type WebSocketClientOptions, type WebSocketConstructor } from './websocket.js'

export { type Http2ClientOptions, Http2StreamingClient } from './http2.js'
export * from './index.js'
export { TcpClient, type TcpClientOptions, zlibFrameCodec } from './tcp.js'

export interface NodeHttpClientOptions extends HttpClientOptions {
  /** Most connections to the server (undici `connections`; default 10). */
  poolSize?: number
  /** How long an idle connection is kept open, in ms (undici `keepAliveTimeout`; default 4000). */
  keepAliveTimeoutMs?: number
  /** Requests sent on one connection before it is replaced (undici `maxRequestsPerClient`; default 0: no limit). */
  maxRequestsPerConnection?: number
  /**
   * Client and bidirectional streams over HTTP/2 (PROTOCOL.md "Over HTTP/2"): `true`, or `{ tls }` for the
   * session's TLS options (`https://`; `http://` is cleartext h2c). Unary calls and server streams stay on
   * fetch. Default off: they are refused as over HTTP/1.1.
   */
  http2?: boolean | Http2ClientOptions
}

export type NodeClientOptions = NodeHttpClientOptions | WebSocketClientOptions | TcpClientOptions

/**
 * Creates a client for one transport: `http`, `websocket` or `tcp`. Given a `contract`, the client is
 * typed by it: `call('orders.create', request)` checks the name, the request and the response.
 */
export function createClient<const C extends Contract>(
  options: NodeClientOptions & { contract: C },
): ContractClient<C>
export function createClient(options: NodeClientOptions): TriviumClient
export function createClient(options: NodeClientOptions): TriviumClient {
  if (!options || typeof options !== 'object') throw optionError('options must be an object')
  switch (options.transport) {
    case 'http':
      return createHttpClient(options)
    case 'websocket':
      return new WebSocketClient({
        ...options,
        WebSocket: options.WebSocket ?? (WebSocket as unknown as WebSocketConstructor),
      })
    case 'tcp':
      return new TcpClient(options)
    default:
      throw optionError(`unknown transport ${JSON.stringify((options as { transport?: unknown }).transport)}`)
  }
}

function createHttpClient(options: NodeHttpClientOptions): HttpClient {
  const h2 = options.http2 ?? false
  if (typeof h2 !== 'boolean' && (typeof h2 !== 'object' || h2 === null))
    throw optionError('http2 must be true, false or { tls }')
  const make = (o: HttpClientOptions, internals?: HttpInternals): HttpClient =>
    h2 === false
      ? new HttpClient(o, internals)
      : new Http2StreamingClient(o, h2 === true ? {} : h2, internals)
  if (options.fetch) return make(options)
  const poolSize = checkNonNegative('poolSize', options.poolSize, 10)
  const keepAliveTimeout = checkNonNegative('keepAliveTimeoutMs', options.keepAliveTimeoutMs, 4000)
  const maxRequests = checkNonNegative('maxRequestsPerConnection', options.maxRequestsPerConnection, 0)
  if (!Number.isInteger(poolSize) || poolSize < 1) throw optionError('poolSize must be an integer >= 1')
  if (!Number.isInteger(maxRequests)) throw optionError('maxRequestsPerConnection must be an integer >= 0')
  const agent = new Agent({
    connections: poolSize,
    keepAliveTimeout: Math.max(1, keepAliveTimeout),
    ...(maxRequests > 0 ? { maxRequestsPerClient: maxRequests } : {}),
  })
  return make(
    { ...options, fetch: undiciFetch as unknown as FetchLike },
    { init: { dispatcher: agent }, onClose: () => agent.close() },
  )
}
