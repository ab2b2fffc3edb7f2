// The common request form of the spec: what every transport's parser builds and what middleware and
// handlers see, whatever the transport.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { httpCredential, metadataCredential, websocketCredential } from './credential.js'
import type { CallDeadline } from './deadline.js'
import type { CallTarget, EndpointDefinition } from './registry.js'

export type Protocol = 'http' | 'websocket' | 'tcp'

export type HeaderMap = Record<string, string | string[] | undefined>

/**
 * Who the caller is, filled by authentication (`@trivium/auth`) and read by authorization, rate
 * limiting and the frame transports (session expiry, `closeSessions`). The fields authentication
 * verified are read-only (with @trivium/auth, assigning one throws TypeError: a handler cannot move
 * a session's expiry or change whose rights the call has). Add fields of your own by declaration
 * merging and fill them in a middleware registered after auth; they are ordinary, writable fields:
 * `declare module '@trivium/core' { interface TriviumIdentity { tenantId?: string } }`, then
 * `call.identity.tenantId = …`.
 */
export interface TriviumIdentity {
  readonly userId: string | number
  readonly username?: string
  readonly roles: readonly string[]
  readonly permissions: readonly string[]
  /** The token id (`jti`), when the credential is a token. */
  readonly tokenId?: string
  /** When the credential stops being valid, in ms since the epoch. */
  readonly expiresAt?: number
}

export interface CallInit<Req = unknown, Target extends CallTarget = EndpointDefinition<Req>> {
  definition: Target
  protocol: Protocol
  requestId: string
  log: FastifyBaseLogger
  headers?: HeaderMap
  method?: string
  query?: Record<string, unknown>
  metadata?: Record<string, string>
  clientIp?: string
  /**
   * Decodes the request model; called at most once, on first access of `call.body`, with the call as
   * `this` (so that one function per route can serve every request).
   */
  decodeBody: (this: TriviumCall<Req, Target>) => Req
  /** The transport's cancellation signal, or a function that makes one on first use. */
  signal?: AbortSignal | (() => AbortSignal)
  /** The Fastify request, on HTTP (and on TCP frames bridged through inject). */
  raw?: FastifyRequest
  /** Shared per-connection state (WebSocket/TCP): the same object for every call on a connection. */
  connection?: Record<string, unknown>
  /**
   * The caller's credential, or a function that finds it on first use (see credential.ts; it may throw
   * UnauthorizedException). Absent: found by the protocol's default place (header/query/metadata).
   */
  credential?: string | (() => string | undefined)
  /** The call's deadline (see deadline.ts `callDeadline`); absent: none. */
  deadline?: CallDeadline
  /** A client or bidirectional stream's request items (frame transports). */
  requests?: AsyncIterable<Req>
  /**
   * Told each time `identity` is set (authentication accepted the credential): a frame connection learns
   * who it is from then on, before the handler runs, whatever kind of call it is (PROTOCOL.md "Frames").
   */
  onIdentity?: IdentityListener
}

/**
 * Told of a call's identity: a function, or an object whose `onIdentity` method is called on it (a frame
 * connection gives the object it has anyway, rather than a closure of its own: bench/density).
 */
export type IdentityListener =
  | ((identity: TriviumIdentity) => void)
  | { onIdentity(identity: TriviumIdentity): void }

/** The default credential of a transport that does not supply `CallInit.credential`. */
export function defaultCredential(
  call: Pick<TriviumCall<unknown>, 'protocol' | 'headers' | 'query' | 'metadata'>,
): string | undefined {
  if (call.protocol === 'http') return httpCredential(call.headers, call.query)
  if (call.protocol === 'websocket') return websocketCredential(call.headers, call.query)
  if (call.protocol === 'tcp') return metadataCredential(call.metadata)
  return undefined
}

const UNSET = Symbol('unset')
/** A decoded call's decoder (never called: its body is set). */
const DECODED = (): never => {
  throw new Error('the body is decoded')
}

/**
 * Gives a call the context keys in `values` (an object literal of the caller's): the call's context when
 * it has none yet (one allocation with its final shape, instead of an empty object grown key by key:
 * bench/README.md "bench/js-path"), else assigned onto the existing one, as `call.context.k = v` each
 * would be. Exported from `@trivium/core/internal` for @trivium/auth.
 */
export let fillContext: (call: TriviumCall<any, any>, values: Record<string, unknown>) => void

/** A call to an endpoint, or (`TriviumCall<unknown, CallTarget>`, what middleware sees) to a guarded plain route. */
export class TriviumCall<Req = unknown, Target extends CallTarget = EndpointDefinition<Req>> {
  // Every field is `declare`d and set once, in the constructor, in one order (one shape for every call):
  // a class field without `declare` is defined (as undefined) before the constructor runs, and the
  // constructor then stores it a second time (bench/README.md "bench/js-path").
  /** Endpoint name. */
  declare readonly endpoint: string
  declare readonly protocol: Protocol
  /** Request headers (HTTP; WebSocket: the upgrade request's headers). */
  declare readonly headers: HeaderMap
  /** HTTP method (HTTP only). */
  declare readonly method: string | undefined
  /** Query parameters (HTTP; WebSocket: the upgrade URL's query). */
  declare readonly query: Record<string, unknown>
  /** Request metadata (TCP frames: e.g. `auth_token`). */
  declare readonly metadata: Record<string, string>
  declare readonly clientIp: string | undefined
  declare readonly requestId: string
  declare readonly log: FastifyBaseLogger
  declare readonly definition: Target
  declare readonly raw: FastifyRequest | undefined
  declare readonly connection: Record<string, unknown> | undefined
  /** Headers to add to an HTTP response; other transports ignore them. */
  declare responseHeaders: Record<string, string> | undefined
  /**
   * The request items of a client or bidirectional stream, as they arrive (the handler's first argument);
   * undefined for other endpoints. `body` is undefined for these calls.
   */
  declare readonly requests: AsyncIterable<Req> | undefined

  declare private contextValue: Record<string, unknown> | undefined
  declare private identityValue: TriviumIdentity | undefined
  declare private readonly identityListener: IdentityListener | undefined
  declare private bodyValue: Req | typeof UNSET
  // Not typed by Target: a call to an endpoint is also a call that middleware sees (`TriviumCall<any, CallTarget>`).
  declare private decodeBody: (this: TriviumCall<Req, any>) => Req
  declare private signalValue: AbortSignal | undefined
  declare private readonly signalSource: AbortSignal | (() => AbortSignal) | undefined
  declare private credentialValue: string | undefined | typeof UNSET
  declare private readonly credentialSource: string | (() => string | undefined) | undefined
  declare private readonly deadlineState: CallDeadline | undefined

  constructor(init: CallInit<Req, Target>) {
    this.definition = init.definition
    this.endpoint = init.definition.name
    this.protocol = init.protocol
    this.requestId = init.requestId
    this.log = init.log
    this.headers = init.headers ?? {}
    this.method = init.method
    this.query = init.query ?? {}
    this.metadata = init.metadata ?? {}
    this.clientIp = init.clientIp
    this.raw = init.raw
    this.connection = init.connection
    this.responseHeaders = undefined
    this.decodeBody = init.decodeBody
    this.signalSource = init.signal
    this.credentialSource = init.credential
    this.requests = init.requests
    this.deadlineState = init.deadline
    this.identityListener = init.onIdentity
    this.contextValue = undefined
    this.identityValue = undefined
    this.bodyValue = UNSET
    this.signalValue = undefined
    this.credentialValue = UNSET
  }

  static {
    fillContext = (call, values) => {
      if (call.contextValue === undefined) call.contextValue = values
      else Object.assign(call.contextValue, values)
    }
  }

  /**
   * Mutable key/value map shared by middleware and handler (auth puts user_id, roles… here). Made on
   * first use: most calls to a public endpoint never read it.
   */
  get context(): Record<string, unknown> {
    if (this.contextValue === undefined) this.contextValue = {}
    return this.contextValue
  }

  /** The authenticated caller (set by authentication middleware); undefined when anonymous. */
  get identity(): TriviumIdentity | undefined {
    return this.identityValue
  }

  set identity(identity: TriviumIdentity | undefined) {
    this.identityValue = identity
    const listener = this.identityListener
    if (identity === undefined || listener === undefined) return
    if (typeof listener === 'function') listener(identity)
    else listener.onIdentity(identity)
  }

  /**
   * Milliseconds left before the call's deadline (the earlier of the client's timeout and the endpoint's
   * `timeoutMs`), 0 once it has passed; undefined when the call has none. Pass it (or `call.signal`)
   * down to work that can stop early.
   */
  get deadline(): number | undefined {
    return this.deadlineState?.remaining()
  }

  /**
   * The credential the caller presented (a bearer token), found on first access. Throws
   * UnauthorizedException for a credential given more than once.
   */
  get credential(): string | undefined {
    if (this.credentialValue === UNSET) {
      const source = this.credentialSource
      this.credentialValue =
        source === undefined ? defaultCredential(this) : typeof source === 'function' ? source() : source
    }
    return this.credentialValue
  }

  /**
   * The request model. Decoded on first access so that authentication runs before a body is
   * examined; a bad body throws ValidationException here.
   */
  get body(): Req {
    // An asynchronous model (a Standard Schema's async checks) gives a promise: the router awaits it,
    // middleware may `await call.body`.
    if (this.bodyValue === UNSET) {
      this.bodyValue = this.decodeBody.call(this)
      // The decoder's closure holds the request's bytes (a frame stream's REQUEST message, for as long as
      // the stream is open: bench/fanout): let go once the body is decoded (it is never decoded again).
      this.decodeBody = DECODED
    }
    return this.bodyValue
  }

  /**
   * Aborted when the client goes away, cancels, or the call's deadline passes (then with the
   * TimeoutException the call is answered with). Made on first use. The deadline is also read from the
   * clock each time this (or `call.deadline`) is read: a handler that kept the thread busy past it gets
   * an aborted signal before its timer could run.
   */
  get signal(): AbortSignal {
    const deadline = this.deadlineState
    if (this.signalValue === undefined) {
      const source = typeof this.signalSource === 'function' ? this.signalSource() : this.signalSource
      const base = source ?? new AbortController().signal
      this.signalValue = deadline ? AbortSignal.any([base, deadline.signal]) : base
    }
    deadline?.passed()
    return this.signalValue
  }

  /**
   * Throws `call.signal`'s reason when it has aborted — the deadline read from the clock, so also when a
   * handler kept the thread busy past it and no timer could run yet. Call it as the last step before
   * work that cannot be undone (the COMMIT of a write): a call answered 504 then writes nothing.
   */
  throwIfAborted(): void {
    this.signal.throwIfAborted()
  }

  /** Adds a header to the HTTP response (ignored by WebSocket and TCP). */
  setHeader(name: string, value: string): void {
    if (this.responseHeaders === undefined) this.responseHeaders = {}
    this.responseHeaders[name] = value
  }
}
