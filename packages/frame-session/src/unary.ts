// Running one call on a frame connection: through core's pipeline (or a unary bridge, TCP's inject
// mode), answered by its RESPONSE or ERROR frame, or by a stream handed to the pump.
import type {
  EndpointDefinition,
  TriviumCall,
  TriviumError,
  TriviumIdentity,
  WireFormat,
} from '@trivium/core'
import {
  defaultCredential,
  type HeaderMap,
  isNamedRoute,
  isThenable,
  jsonFormat,
  type StartedCall,
  type TransportOverride,
} from '@trivium/core/internal'
import { type Cancellation, FrameType } from '@trivium/wire'
import type { FrameCarrier } from './carrier.js'
import type { SessionCompression } from './compression.js'
import type { CallTable } from './flow-control.js'
import type { RequestInbox } from './request-stream.js'
import { pumpStream } from './server-stream.js'
import type { FrameSession, SessionContext, SessionInit } from './session.js'

/** A unary call handed to a bridge (TCP's inject mode replays it through the endpoint's Fastify route). */
export interface BridgedCall {
  definition: EndpointDefinition
  /** The request payload's format, and the one the response is asked in. */
  format: WireFormat
  accept: WireFormat
  payload: Uint8Array
  override: TransportOverride
  entry: Cancellation
  /** `<connection>:<frame id>`: the request id an error body carries. */
  requestId: string
}

/** A bridged call's answer: the frame body (an error body carrying the call's request id), the call it ran. */
export interface BridgedOutcome {
  ok: boolean
  body: Uint8Array | string
  call: TriviumCall | undefined
}

/** Runs unary calls another way than core's pipeline (TCP's inject bridge, in @trivium/tcp). */
export interface UnaryBridge {
  call(call: BridgedCall): Promise<BridgedOutcome>
  /** The bridge of named routes: runs a streaming named route's call (named-route-stream.ts). */
  stream?(host: CallHost, start: CallStart, requestId: string, credential: string | undefined): Promise<void>
}

/** One admitted call, as the session hands it to the runner. */
export interface CallStart {
  endpoint: string
  /** The registry's definition; undefined: core answers with its own "no such endpoint". */
  definition: EndpointDefinition | undefined
  /** The frame's request id. */
  id: number
  payload: Uint8Array
  metadata: Record<string, string> | undefined
  format: WireFormat
  entry: Cancellation
  /** A client stream's inbox of request items. */
  requests: RequestInbox | undefined
}

/** What the runner uses of its session (one object per session). */
export interface CallHost {
  readonly session: FrameSession
  readonly ctx: SessionContext
  readonly carrier: FrameCarrier
  /** The init's (SessionInit): the host holds them, not the init (one object per session less). */
  readonly format: WireFormat
  readonly headers: HeaderMap | undefined
  readonly query: Record<string, unknown> | undefined
  readonly credential: SessionInit['credential']
  readonly splitRequest: SessionInit['splitRequest']
  readonly calls: CallTable
  readonly compression: SessionCompression
  /**
   * The connection's credential when the init has its own (`init.credential`), read when a call without
   * frame metadata asks: made at the first such call. Without one, core's default for the protocol.
   */
  connectionCredential: (() => string | undefined) | undefined
  /** Every call's `onIdentity` (core calls it on the host: no closure per session). */
  onIdentity(identity: TriviumIdentity): void
  /** `<connection id>:`, made once: a call's request id is this and the frame's id (one concatenation). */
  readonly requestIdPrefix: string
}

/**
 * Every call's `onIdentity` (`this` is the session's call host, core calls it on it): the connection learns
 * who it is the moment authentication accepts a call's token, before the handler runs, so `closeSessions`
 * and the expiry timer see a connection whose only call is still running (a client stream, a long unary
 * call, a logout of its own token). One function for every session (a closure each held ~0.1 KiB).
 */
export function hostIdentity(this: CallHost, identity: TriviumIdentity): void {
  const session = this.session
  if (!session.closed) session.identify(identity)
}

/** Learns the identity a call ended with (middleware may complete it after `onIdentity`). */
function learnIdentity(host: CallHost, call: TriviumCall): void {
  const identity = call.identity
  if (identity !== undefined) host.onIdentity(identity)
}

export function responseFormat(definition: EndpointDefinition, format: WireFormat): WireFormat {
  // A response model without a binary form is sent as JSON (as on HTTP).
  return format !== jsonFormat && !definition.response.encode ? jsonFormat : format
}

/**
 * A call's credential: the connection's, found when asked, or — metadata travels per frame (TCP) — the
 * frame's, read now (a map lookup, never throws) unless the carrier read it already (`given`).
 */
function callCredential(
  host: CallHost,
  metadata: Record<string, string> | undefined,
  given: string | null | undefined,
): string | undefined | (() => string | undefined) {
  const own = host.credential
  // No credential of the init's own: core finds the protocol's (WebSocket: the upgrade's query, then its
  // Authorization header; TCP: the frame's metadata), when asked.
  if (own === undefined) return given ?? undefined
  if (metadata === undefined) {
    host.connectionCredential ??= () => own(undefined)
    return host.connectionCredential
  }
  return given !== undefined ? (given ?? undefined) : own(metadata)
}

/** A named route's credential now (its hooks read it as a header): core's default when none is given. */
function routeCredential(
  host: CallHost,
  metadata: Record<string, string> | undefined,
  credential: string | undefined | (() => string | undefined),
): string | undefined {
  if (typeof credential === 'function') return credential()
  if (credential !== undefined || host.credential !== undefined) return credential
  const { protocol } = host.session
  return defaultCredential({
    protocol,
    headers: host.headers ?? {},
    query: host.query ?? {},
    metadata: metadata ?? {},
  })
}

/**
 * Runs one call. Not async: when the pipeline and the handler answer synchronously (no middleware
 * waiting on I/O, a handler that returns a value) the response is queued in this turn, with no promise
 * or microtask per call; a promise or a stream continues in `complete`, a bridged call in `runBridged`.
 * The call's parts come as arguments: a `CallStart` object is made only for a bridged call.
 */
export function runCall(
  host: CallHost,
  endpoint: string,
  definition: EndpointDefinition | undefined,
  id: number,
  payload: Uint8Array,
  metadata: Record<string, string> | undefined,
  /** The credential the carrier read with the metadata (RequestParts.credential). */
  given: string | null | undefined,
  /** The metadata's `timeout_ms` as the carrier read it (RequestParts.timeout). */
  timeout: string | null | undefined,
  format: WireFormat,
  entry: Cancellation,
  requests: RequestInbox | undefined,
): void {
  const { session, ctx } = host
  const requestId = host.requestIdPrefix + id
  let started: StartedCall
  try {
    const credential = callCredential(host, metadata, given)
    if (definition !== undefined && isNamedRoute(definition)) {
      // A named Fastify route runs through the route itself; its hooks read the credential as a header.
      const token = routeCredential(host, metadata, credential)
      const start = { endpoint, definition, id, payload, metadata, format, entry, requests }
      if (definition.streaming && ctx.routes.stream !== undefined)
        void ctx.routes.stream(host, start, requestId, token)
      else void runBridged(host, start, requestId, ctx.routes, token)
      return
    }
    if (
      ctx.bridge !== undefined &&
      definition !== undefined &&
      !definition.streaming &&
      !definition.requestStream
    ) {
      const start = { endpoint, definition, id, payload, metadata, format, entry, requests }
      void runBridged(host, start, requestId, ctx.bridge)
      return
    }
    started = ctx.trivium.start({
      endpoint,
      protocol: session.protocol,
      payload,
      format,
      requestId,
      log: session.log,
      headers: host.headers,
      query: host.query,
      metadata,
      timeout,
      clientIp: session.clientIp,
      credential,
      signal: entry.lazySignal,
      connection: session.state,
      requests,
      onIdentity: host,
    })
    // The endpoint's deadline bounds the whole stream: a handler waiting for an item is woken by it.
    if (requests !== undefined && started.call.definition.timeoutMs !== undefined) {
      const signal = started.call.signal
      // Reading `call.signal` aborts it when the deadline has passed by the clock (a loaded machine can
      // spend the whole deadline before this line); an aborted signal fires no further 'abort' event.
      if (signal.aborted) requests.fail(signal.reason)
      else signal.addEventListener('abort', () => requests.fail(signal.reason), { once: true })
    }
    const result = started.result
    if (!started.call.definition.streaming && !isThenable(result)) {
      respond(host, id, started.call, result, format, entry)
      host.calls.settle(id, entry)
      return
    }
  } catch (err) {
    failed(host, id, err, entry)
    host.calls.settle(id, entry)
    return
  }
  void complete(host, id, started.call, started.result, format, entry)
}

/** The rest of a call whose answer is a promise, or a stream. */
async function complete(
  host: CallHost,
  id: number,
  call: TriviumCall,
  pending: unknown,
  format: WireFormat,
  entry: Cancellation,
): Promise<void> {
  try {
    const result = await pending
    const definition = call.definition
    if (definition.streaming) {
      learnIdentity(host, call)
      await pumpStream({
        id,
        definition,
        format: responseFormat(definition, format),
        items: result as AsyncIterable<unknown>,
        signal: entry.signal,
        carrier: host.carrier,
        send: host.compression.send.bind(host.compression),
        highWaterMark: host.ctx.options.highWaterMark,
        shutdownError: host.ctx.shutdownError,
      })
    } else {
      respond(host, id, call, result, format, entry)
    }
  } catch (err) {
    failed(host, id, err, entry)
  } finally {
    host.calls.release(id, entry, call)
  }
}

/** What the route sees of the frame's connection (core's `transportOf`, the route guard). */
export function bridgedOverride(
  host: CallHost,
  start: CallStart,
  credential: string | undefined,
): TransportOverride {
  const { session } = host
  const override: TransportOverride = {
    protocol: session.protocol,
    clientIp: session.clientIp,
    connection: session.state,
    onIdentity: host,
  }
  if (start.metadata !== undefined) override.metadata = start.metadata
  if (credential !== undefined) override.credential = credential
  return override
}

/** A unary call through the bridge: the answer is the route's own response, already encoded. */
async function runBridged(
  host: CallHost,
  start: CallStart,
  requestId: string,
  bridge: UnaryBridge,
  credential?: string,
): Promise<void> {
  const { id, entry, format } = start
  const definition = start.definition as EndpointDefinition
  const override = bridgedOverride(host, start, credential)
  let answered: TriviumCall | undefined
  try {
    const out = await bridge.call({
      definition,
      format,
      accept: responseFormat(definition, format),
      payload: start.payload,
      override,
      entry,
      requestId,
    })
    answered = out.call
    if (out.call) learnIdentity(host, out.call)
    if (entry.aborted || !host.carrier.open) return
    host.compression.send(out.ok ? FrameType.RESPONSE : FrameType.ERROR, id, out.body)
  } catch (err) {
    failed(host, id, err, entry)
  } finally {
    host.calls.release(id, entry, answered)
  }
}

/** A unary call's value as its RESPONSE frame (nothing when the call was cancelled or the carrier closed). */
function respond(
  host: CallHost,
  id: number,
  call: TriviumCall,
  result: unknown,
  format: WireFormat,
  entry: Cancellation,
): void {
  learnIdentity(host, call)
  if (entry.aborted || !host.carrier.open) return
  const definition = call.definition
  host.compression.send(
    FrameType.RESPONSE,
    id,
    responseFormat(definition, format).encode(definition.response, result),
  )
}

export function failed(host: CallHost, id: number, err: unknown, entry: Cancellation): void {
  if (!entry.aborted) host.session.sendError(id, err)
  else if (entry.reason === host.ctx.shutdownError) host.session.sendError(id, entry.reason as TriviumError)
}
