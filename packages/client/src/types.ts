// Public types shared by every transport.
import type { Contract } from '@trivium/contract'
import type { DeriveBinaryForm } from './contract.js'
import type { TriviumError } from './errors.js'

/**
 * What the client needs to know about a request or response type. Structurally the same as
 * @trivium/core's `Model` (generated models of @trivium/codec and core's `jsonSchemaModel` fit), declared
 * here so the browser entry does not depend on core.
 */
export interface ClientModel<T = unknown> {
  readonly name?: string
  /** JSON Schema of the JSON form (not used by the client; kept for structural compatibility). */
  readonly jsonSchema?: Record<string, unknown>
  fromJSON(json: unknown): T
  toJSON(value: T): unknown
  stringify?(value: T): string
  encode?(value: T): Uint8Array
  decode?(bytes: Uint8Array): T
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** One entry of the endpoint table: the same facts the server registered. */
export interface EndpointSpec<Req = unknown, Res = unknown> {
  /** Endpoint name on the wire, e.g. `tasks.create`. */
  name: string
  /** HTTP route (used by the HTTP transport). */
  method: HttpMethod
  url: string
  /** HTTP success status (informational; any 2xx is a success). */
  status?: number
  request: ClientModel<Req>
  /** The response model (for a streaming endpoint: the model of one item). */
  response: ClientModel<Res>
  streaming: boolean
  /**
   * The endpoint takes a stream of requests (WebSocket and TCP): `clientStream()` when it answers one
   * response, `bidiStream()` when `streaming` too (PROTOCOL.md "Client and bidirectional streams").
   */
  requestStream?: boolean
  /**
   * Streams only: how to resume after a lost connection. Given the original request and the last
   * item received, returns the request that continues the stream after that item. Without it, a
   * stream that loses its connection ends with NetworkException (see README "Streams and reconnection").
   * A method (its parameters bivariant) so that a typed spec is still an EndpointSpec<unknown>: a table
   * holds specs of every type side by side.
   */
  resume?(request: Req, lastItem: Res): Req
}

export type EndpointTable = Record<string, EndpointSpec>

/** The value a token provider gives: a token, or nothing for anonymous calls. */
export type TokenProvider = string | (() => string | undefined | null | Promise<string | undefined | null>)

export type PayloadFormat = 'binary' | 'json'

export interface CallOptions {
  /**
   * Deadline for each attempt of this call in ms (default: the client's `timeoutMs`), sent to the server
   * (PROTOCOL.md "Deadlines"), which stops the handler at the same moment. 0 disables it. HTTP sends it
   * (`Trivium-Timeout-Ms`, which a cross-origin page needs allowed by CORS) only when given here or on
   * the client; the default deadline is the client's own timer.
   */
  timeoutMs?: number
  /**
   * The idempotency key of this call (PROTOCOL.md "Idempotency keys"). Default on WebSocket and TCP: a new
   * random one for every call of a POST endpoint, sent on every attempt of it; none for other methods.
   * HTTP generates one only when the client has `retries` (`Idempotency-Key`, which a cross-origin page
   * needs allowed by CORS).
   */
  idempotencyKey?: string
  /** Aborting rejects the call with the signal's reason and cancels it on the server. */
  signal?: AbortSignal
}

export interface StreamOptions {
  /** Aborting ends the iteration with the signal's reason and cancels the stream on the server. */
  signal?: AbortSignal
  /**
   * Deadline for the whole stream in ms, sent to the server (PROTOCOL.md "Deadlines"): when it passes the
   * stream ends with TimeoutException. Default none (the client's `timeoutMs` is for calls); 0 disables it.
   */
  timeoutMs?: number
}

/**
 * The sending half of a client or bidirectional stream. Await each `send`: it waits for the server's
 * credit (a slow handler slows the sender down), so memory stays bounded.
 */
export interface RequestStream<Req> {
  /**
   * Sends one request item. Resolves `true` once it is on the connection, `false` when the server reads
   * no more items (it answered, or sent STOP_SENDING); rejects with the call's error when it failed.
   */
  send(item: Req): Promise<boolean>
  /** Sends every item (waiting for each), then half-closes. Resolves `false` if the server stopped reading. */
  sendAll(items: Iterable<Req> | AsyncIterable<Req>): Promise<boolean>
  /** Half-closes: no more items (the handler's `for await` ends). */
  end(): Promise<void>
  /** Cancels the call on the server (CANCEL); the response (or the iteration) rejects with `reason`. */
  cancel(reason?: unknown): void
}

/** A client stream: items out, one response back. */
export interface ClientStreamCall<Req, Res> extends RequestStream<Req> {
  /** The server's one answer (usually after `end()`). */
  readonly response: Promise<Res>
}

/** A bidirectional stream: items out, and itself the iterable of the server's items. */
export interface BidiStreamCall<Req, Item> extends RequestStream<Req>, AsyncIterable<Item> {}

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'closed'

export interface ClientEvents {
  /** A connection (WS/TCP) is open. `reconnected` is true after the first one. */
  connected: (info: { reconnected: boolean }) => void
  /** A connection was lost or closed. `willReconnect` says whether the client will try again. */
  disconnected: (info: { reason: string; willReconnect: boolean }) => void
  /** A connection error, a failed reconnect, or bad data from the server. */
  error: (error: TriviumError) => void
  /** Every change of `state`. */
  stateChange: (state: ConnectionState) => void
}

export interface CommonClientOptions {
  /** The endpoint table: name → spec (the `endpoints` of @trivium/codec's generated code). */
  endpoints?: EndpointTable
  /**
   * A contract (@trivium/contract's `defineContract`, the module the server implements): its endpoints
   * join the table, and `createClient` returns a client typed by it (README "Contracts").
   */
  contract?: Contract
  /**
   * @trivium/codec's `deriveBinaryForm` (`import { deriveBinaryForm } from '@trivium/codec/runtime'`): a
   * contract's TypeBox, JSON Schema or Standard JSON Schema model whose layout is derivable is then sent
   * and read in binary, the bytes the server derives with @trivium/codec registered (README "Contracts").
   */
  deriveBinary?: DeriveBinaryForm
  /** Token (or provider called before each call / connection). */
  token?: TokenProvider
  /** Called once when a call fails with TokenExpiredException; its token replaces `token`. */
  refresh?: () => Promise<string>
  /** Payload format. Default: `binary` when the models have a binary form, else `json`. */
  format?: PayloadFormat
  /**
   * Default per-call deadline in ms (default 30000; 0 disables). Given here, HTTP sends it with every call
   * (`Trivium-Timeout-Ms`); the default is enforced by the client alone over HTTP (it aborts the request),
   * sent as metadata over WebSocket and TCP.
   */
  timeoutMs?: number
  /** W3C `traceparent` (or a provider) sent to continue a trace: HTTP header and TCP metadata per call,
   *  WebSocket upgrade URL query per connection (browsers cannot set upgrade headers). */
  traceparent?: string | (() => string | undefined)
  /**
   * Attempts after the first when a call fails with NetworkException, ServiceUnavailableException (503)
   * or ConflictException (409: the same idempotency key still running). Default 0. Every attempt of a
   * call carries the same idempotency key (HTTP: `Idempotency-Key`, sent because of these retries), so
   * a retried POST is answered with the first answer on an endpoint that accepts keys; on one that does
   * not, a retried POST may run twice.
   */
  retries?: number
  /** Delay before the first retry in ms (default 200), doubled before each next one. */
  retryDelayMs?: number
}

export interface ReconnectOptions {
  /** Reconnect attempts after a lost connection before giving up (default 10; 0 disables; Infinity allowed). */
  reconnectAttempts?: number
  /** Delay before the first reconnect attempt in ms (default 500). Doubles each attempt. */
  reconnectDelayMs?: number
  /** Largest delay between attempts in ms (default 30000). */
  reconnectMaxDelayMs?: number
  /** Random part of each delay, 0..1 (default 0.2: ±20%). */
  reconnectJitter?: number
  /** Send a PING every this many ms and drop the connection when no PONG comes within it (default 0: off). */
  pingIntervalMs?: number
  /** Open the connection at creation instead of at the first call (default false). */
  eager?: boolean
}

/** One interface on every transport. */
export interface TriviumClient {
  readonly transport: 'http' | 'websocket' | 'tcp'
  /** Connection state (HTTP: always `connected` until `close()`). */
  readonly state: ConnectionState
  // `any`: a call by name the client's type cannot see is read without a cast (a spec or contract types it)
  call<Res = any>(
    endpoint: string | EndpointSpec<unknown, Res>,
    request?: unknown,
    options?: CallOptions,
  ): Promise<Res>
  // `any`: as for call(), an item of a stream by name is read without a cast
  stream<Item = any>(
    endpoint: string | EndpointSpec<unknown, Item>,
    request?: unknown,
    options?: StreamOptions,
  ): AsyncIterable<Item>
  /** Opens a client stream (WebSocket and TCP; the HTTP client refuses with `TRV_CLIENT_USAGE`). */
  clientStream<Req = unknown, Res = unknown>(
    endpoint: string | EndpointSpec<Req, Res>,
    options?: StreamOptions,
  ): ClientStreamCall<Req, Res>
  /** Opens a bidirectional stream (WebSocket and TCP; the HTTP client refuses with `TRV_CLIENT_USAGE`). */
  bidiStream<Req = unknown, Item = unknown>(
    endpoint: string | EndpointSpec<Req, Item>,
    options?: StreamOptions,
  ): BidiStreamCall<Req, Item>
  /** Server push on `topic` (WS/TCP; SUBSCRIBE frame). Resolves once subscribed; returns an unsubscribe function. */
  onPush(topic: string, handler: (message: unknown) => void): Promise<() => Promise<void>>
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void
  onConnected(listener: ClientEvents['connected']): () => void
  onDisconnected(listener: ClientEvents['disconnected']): () => void
  onError(listener: ClientEvents['error']): () => void
  /** Replaces the token (e.g. after a login). WS: used from the next connection. */
  setToken(token: TokenProvider | undefined): void
  /** Opens the connection now (WS/TCP); resolves when connected. */
  connect(): Promise<void>
  /** Fails everything in flight with NetworkException('Client closed') and stops reconnecting. */
  close(): Promise<void>
}
