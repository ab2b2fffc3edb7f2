// @trivium/client — browser-safe entry: HTTP (fetch) and WebSocket (the global WebSocket).
// `@trivium/client/node` adds TCP, undici pool options and the `ws` package.
import type { Contract } from '@trivium/contract'
import { optionError } from './base.js'
import type { ContractClient } from './contract.js'
import { HttpClient, type HttpClientOptions } from './http.js'
import type { TriviumClient } from './types.js'
import { WebSocketClient, type WebSocketClientOptions } from './websocket.js'

export { type ContractClient, contractEndpoints } from './contract.js'
export * from './errors.js'
export type { FrameCodec, FrameCompressionOptions } from './frame-compression.js'
export {
  BINARY_CONTENT_TYPE,
  type FetchLike,
  HttpClient,
  type HttpClientOptions,
  JSON_CONTENT_TYPE,
} from './http.js'
export { type HttpRequestParts, toHttp } from './http-mapping.js'
export type {
  CallOptions,
  ClientEvents,
  ClientModel,
  CommonClientOptions,
  ConnectionState,
  EndpointSpec,
  EndpointTable,
  HttpMethod,
  PayloadFormat,
  ReconnectOptions,
  StreamOptions,
  TokenProvider,
  TriviumClient,
} from './types.js'
export {
  DEFAULT_CLIENT_MAX_FRAME_BYTES,
  WebSocketClient,
  type WebSocketClientOptions,
  type WebSocketConstructor,
  type WebSocketLike,
} from './websocket.js'

export type ClientOptions = HttpClientOptions | WebSocketClientOptions

/**
 * Creates a client for one transport (browser entry: `http` or `websocket`). Given a `contract`, the
 * client is typed by it: `call('orders.create', request)` checks the name, the request and the response.
 */
export function createClient<const C extends Contract>(
  options: ClientOptions & { contract: C },
): ContractClient<C>
export function createClient(options: ClientOptions): TriviumClient
export function createClient(options: ClientOptions): TriviumClient {
  if (!options || typeof options !== 'object') throw optionError('options must be an object')
  switch (options.transport) {
    case 'http':
      return new HttpClient(options)
    case 'websocket':
      return new WebSocketClient(options)
    default:
      throw optionError(`unknown transport ${JSON.stringify((options as { transport?: unknown }).transport)}`)
  }
}
