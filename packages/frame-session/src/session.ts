// One frame connection, whatever carries its bytes (PROTOCOL.md "Frames"): admission of request ids,
// calls through core's pipeline (or the TCP inject bridge), stream pumping with backpressure, CANCEL,
// SUBSCRIBE with authorization, push, identity and token expiry, idle timeout and GOAWAY.
import { channel } from 'node:diagnostics_channel'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import {
  type EndpointDefinition,
  ForbiddenException,
  type FrameRejectReason,
  isNamedRoute,
  normalizeError,
  PayloadTooLargeException,
  RateLimitExceededException,
  ServiceUnavailableException,
  TokenExpiredException,
  TRIVIUM_CHANNELS,
  type Trivium,
  type TriviumCall,
  type TriviumError,
  type TriviumIdentity,
  toErrorBody,
  UnauthorizedException,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import {
  atExpiry,
  encodePayload,
  type HeaderMap,
  handlerSettled,
  isThenable,
  jsonFormat,
  SHUTDOWN_MESSAGE,
  STOPPED,
  type StartedCall,
  StreamStop,
  TOKEN_EXPIRED_MESSAGE,
  type TransportOverride,
} from '@trivium/core/internal'
import {
  Cancellation,
  DEFAULT_MAX_FRAME_BYTES,
  FRAME_COMPRESSED,
  type Frame,
  FrameError,
  FrameErrorCode,
  FrameType,
  frameBody,
  frameTypeName,
  type Inflate,
  inflateFrame,
} from '@trivium/wire'
import type { Session, SessionHub } from '@trivium/wire/sessions'
import type { FastifyBaseLogger } from 'fastify'
import type { CloseKind, FrameCarrier, RequestParts } from './carrier.js'
import type { ResolvedFrameSessionOptions } from './options.js'
import { RequestInbox } from './request-stream.js'

const EMPTY = new Uint8Array(0)
const noop = (): void => {}
const textEncoder = new TextEncoder()
/** Stops at `maxBytes` (zlib throws ERR_BUFFER_TOO_LARGE): a bomb never inflates past the limit. */
const inflateRaw: Inflate = (body, maxBytes) =>
  inflateRawSync(body, { maxOutputLength: Math.max(1, maxBytes) })

/** What a frame transport tells callers while it shuts down (ERROR 503 and the GOAWAY reason). */
export { SHUTDOWN_MESSAGE }

/** Ids of streams whose request half the server ended before the client's CLIENT_END, remembered per connection. */
const REMEMBERED_ENDED_STREAMS = 256

/** The spec's message for an expired token; also sent (ERROR id 0) when a session's token expires. */
export { TOKEN_EXPIRED_MESSAGE }

const rejectedChannel = channel(TRIVIUM_CHANNELS.frameRejected)
const pushChannel = channel(TRIVIUM_CHANNELS.push)

/** Who a connection is before any call (the WebSocket `identify` hook at upgrade time). */
export type ConnectionIdentity = Pick<TriviumIdentity, 'userId' | 'tokenId' | 'expiresAt'>

/** The TCP inject bridge: a unary call replayed through the endpoint's Fastify route. */
export interface UnaryBridge {
  call(
    definition: EndpointDefinition,
    format: WireFormat,
    accept: WireFormat,
    payload: Uint8Array,
    override: TransportOverride,
    entry: Cancellation,
  ): Promise<BridgedOutcome>
}

/** A bridged call's HTTP response: the body as the route encoded it, and the call it ran (if any). */
export interface BridgedOutcome {
  ok: boolean
  body: Uint8Array
  call: TriviumCall | undefined
}

/** What every session of one transport server shares. */
export interface SessionContext {
  readonly transport: 'websocket' | 'tcp'
  readonly trivium: Trivium
  readonly hub: SessionHub
  readonly options: ResolvedFrameSessionOptions
  readonly bridge: UnaryBridge | undefined
  /** The bridge of named Fastify routes (every transport): their calls run the route itself. */
  readonly routes: UnaryBridge
  isShuttingDown(): boolean
  /** Abort reason at shutdown: streams end with an ERROR frame carrying it. */
  readonly shutdownError: TriviumError
  onClosed(session: FrameSession): void
}

export interface SessionInit {
  id: string
  clientIp: string | undefined
  log: FastifyBaseLogger
  /** The connection's payload format (WebSocket: chosen at upgrade; TCP: the default one). */
  format: WireFormat
  /** Headers and query middleware sees (the WebSocket upgrade request's). */
  headers?: HeaderMap
  query?: Record<string, unknown>
  /** The bearer credential of a call, from the frame's metadata or the connection (may throw). */
  credential(metadata: Record<string, string> | undefined): string | undefined
  /** Splits a REQUEST payload into metadata and model (TCP); absent: the payload is the model. */
  splitRequest?(payload: Uint8Array): RequestParts
}

export class FrameSession implements Session {
  readonly id: string
  readonly protocol: 'websocket' | 'tcp'
  userId: string | undefined = undefined
  tokenId: string | undefined = undefined
  readonly topics = new Set<string>()
  readonly clientIp: string | undefined
  readonly log: FastifyBaseLogger
  /** Per-connection state shared by every call (`call.connection`). */
  readonly state: Record<string, unknown>
  /** Calls by request id; an id leaves at its answer or the moment its CANCEL is read. */
  readonly inFlight = new Map<number, Cancellation>()
  /** Handlers still running, cancelled ones included: `maxInFlight` bounds this. */
  running = 0
  /** Open client and bidirectional streams by request id: their request items' inboxes. */
  readonly #inboxes = new Map<number, RequestInbox>()
  /**
   * Streams whose request half the server ended before the client's CLIENT_END (answered, failed): items
   * the client sent before it saw the end are dropped without an answer (oldest forgotten first).
   */
  readonly #endedEarly = new Set<number>()
  /**
   * When the connection was last active (a frame received, a call ended), to the precision of the
   * server's tick: activity only sets a flag, the next tick stamps it with its own clock reading. A
   * clock reading per frame cost as much as a frame's decoding; the idle close still never comes before
   * `idleTimeoutMs` has passed since the activity, and at most one tick later than with exact stamps.
   */
  lastActivity = Date.now()
  /** Activity since the last tick (see lastActivity). */
  #active = false
  closed = false
  /** Earliest token expiry (ms) seen on the session; it ends then. */
  expiresAt: number | undefined = undefined
  readonly #carrier: FrameCarrier
  readonly #ctx: SessionContext
  readonly #init: SessionInit
  /** Cancels the timer that ends the session at `expiresAt`. */
  #cancelExpiry: (() => void) | undefined
  #drained: (() => void) | undefined
  /** Set by `close(reason)` while the calls in flight are still being answered. */
  #closing: UnauthorizedException | undefined
  /** Bodies of at least this many bytes go out compressed: set once the peer offered (PING 0x88). */
  #compressFrom: number | undefined
  /** The connection's credential (WebSocket: from the upgrade), found when a call asks: one per session. */
  readonly #connectionCredential: () => string | undefined
  /**
   * Every call's `onIdentity`: the connection learns who it is the moment authentication accepts a call's
   * token, before the handler runs, so `closeSessions` and the expiry timer see a connection whose only
   * call is still running (a client stream, a long unary call, a logout of its own token). One per session.
   */
  readonly #onIdentity = (identity: TriviumIdentity): void => {
    if (!this.closed) this.#adoptIdentity(identity)
  }

  constructor(carrier: FrameCarrier, ctx: SessionContext, init: SessionInit) {
    this.#carrier = carrier
    this.#ctx = ctx
    this.#init = init
    this.id = init.id
    this.protocol = ctx.transport
    this.clientIp = init.clientIp
    this.log = init.log
    this.state = { id: init.id, protocol: ctx.transport }
    this.#connectionCredential = () => init.credential(undefined)
  }

  // ---- from the carrier ----

  /** Something arrived: the connection is not idle. */
  touch(): void {
    this.#active = true
  }

  /** One decoded frame. Never throws. */
  receive(received: Frame): void {
    if (this.closed) return
    try {
      const frame = received.compressed ? this.#inflate(received) : received
      if (frame === undefined) return
      switch (frame.type) {
        case FrameType.REQUEST:
          this.#onRequest(frame)
          return
        case FrameType.CANCEL: {
          // The id is free at once (PROTOCOL.md): a REQUEST reusing it in the same read is a new call.
          this.#endedEarly.delete(frame.requestId)
          const entry = this.inFlight.get(frame.requestId)
          if (entry === undefined) return
          this.inFlight.delete(frame.requestId)
          const inbox = this.#inboxes.get(frame.requestId)
          if (inbox?.entry === entry) {
            inbox.cancelled = true
            this.#inboxes.delete(frame.requestId)
          }
          entry.abort(new Error('cancelled by the client'))
          return
        }
        case FrameType.CLIENT_ITEM:
        case FrameType.CLIENT_END:
          this.#onClientFrame(frame)
          return
        case FrameType.PING:
          this.#carrier.sendBody(FrameType.PONG, frame.requestId, EMPTY)
          return
        case FrameType.PONG:
          return
        case FrameType.SUBSCRIBE:
          void this.#onSubscribe(frame)
          return
        case FrameType.UNSUBSCRIBE:
          this.#ctx.hub.unsubscribe(this, frame.topic as string)
          this.#carrier.sendBody(FrameType.RESPONSE, frame.requestId, EMPTY)
          return
        default:
          this.#reject(
            frame.requestId,
            new ValidationException(`Frame type ${frameTypeName(frame.type)} cannot be sent to the server`),
            'unknown_type',
          )
      }
    } catch (err) {
      this.log.error({ err }, 'frame handler failed')
      this.#end('internal', 'Internal server error')
    }
  }

  /**
   * A frame received with the compression flag (PROTOCOL.md "Compression"): the offer (PING) is answered
   * here; any other is inflated within the carrier's frame limit. Undefined: nothing more to do.
   */
  #inflate(frame: Frame): Frame | undefined {
    const threshold = this.#ctx.options.compressionThreshold
    if (frame.type === FrameType.PING || frame.type === FrameType.PONG) {
      if (frame.type === FrameType.PONG) return undefined
      if (threshold !== undefined) this.#compressFrom = threshold
      const pong = threshold === undefined ? FrameType.PONG : FrameType.PONG | FRAME_COMPRESSED
      this.#carrier.sendBody(pong, frame.requestId, EMPTY)
      return undefined
    }
    if (threshold === undefined) {
      this.#reject(
        frame.requestId,
        new ValidationException('Compressed frames are not enabled on this server'),
        'malformed',
      )
      this.#end('protocol', 'Compressed frames are not enabled on this server')
      return undefined
    }
    const max = this.#carrier.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    try {
      return inflateFrame(frame, inflateRaw, max - 5, max)
    } catch (err) {
      this.rejectFrame(err, true)
      return undefined
    }
  }

  /** Sends a frame's body, compressed when the peer offered and the body is over the threshold. */
  #send(type: number, requestId: number, body: Uint8Array | string): void {
    const from = this.#compressFrom
    // A string's UTF-8 form is at most 3 bytes per code unit: shorter ones are never measured.
    if (from === undefined || body.length * (typeof body === 'string' ? 3 : 1) < from) {
      this.#carrier.sendBody(type, requestId, body)
      return
    }
    const bytes = typeof body === 'string' ? Buffer.from(body) : body
    const packed = bytes.length >= from ? deflateRawSync(bytes) : undefined
    if (packed !== undefined && packed.length < bytes.length)
      this.#carrier.sendBody(type | FRAME_COMPRESSED, requestId, packed)
    else this.#carrier.sendBody(type, requestId, bytes)
  }

  /**
   * A frame the carrier could not decode: ERROR for its request id (0 when unreadable). With `fatal`
   * (the byte stream is out of sync) the connection then closes.
   */
  rejectFrame(err: unknown, fatal: boolean): void {
    if (this.closed) return
    const frameError = err instanceof FrameError ? err : undefined
    const typed =
      frameError?.code === FrameErrorCode.TOO_LARGE
        ? new PayloadTooLargeException(frameError.message)
        : new ValidationException(frameError?.message ?? 'Malformed frame')
    const reason: FrameRejectReason =
      frameError?.code === FrameErrorCode.TOO_LARGE
        ? 'too_large'
        : frameError?.code === FrameErrorCode.UNKNOWN_TYPE
          ? 'unknown_type'
          : 'malformed'
    this.#reject(frameError?.requestId ?? 0, typed, reason)
    if (fatal) this.#end('protocol', typed.message)
  }

  /** Ends the session with ERROR id 0 and a close (e.g. TCP's partial-frame timeout). */
  fail(err: TriviumError, kind: CloseKind = 'protocol'): void {
    if (this.closed) return
    this.sendError(0, err)
    this.#end(kind, err.message)
  }

  /** The carrier's connection closed (by either side). */
  connectionClosed(): void {
    this.#cleanup()
  }

  /** Applies an identity found before any call (WebSocket `identify` at upgrade). */
  identify(identity: ConnectionIdentity): void {
    this.#adoptIdentity(identity)
  }

  // ---- Session (push hub) ----

  push(topic: string, json: string): void {
    try {
      if (this.closed || !this.#carrier.open) return
      if (this.#carrier.backlog > this.#ctx.options.maxPushBacklog) {
        publish(pushChannel, { transport: this.protocol, event: 'dropped' })
        this.log.warn('push backlog over limit: closing')
        this.#end('slow_consumer', 'Push backlog over limit')
        return
      }
      const frame = { type: FrameType.PUSH, requestId: 0, topic, payload: textEncoder.encode(json) }
      if (this.#compressFrom === undefined) this.#carrier.sendFrame(frame)
      else this.#send(FrameType.PUSH, 0, frameBody(frame))
      publish(pushChannel, { transport: this.protocol, event: 'sent' })
    } catch (err) {
      this.log.error({ err }, 'push failed')
    }
  }

  /**
   * Closes the session (revocation, `closeSessions`): ERROR id 0 UnauthorizedException, then close. The
   * unary calls in flight are answered first (up to `shutdownGraceMs`; a logout revokes the token of
   * its own session while it runs, and is still answered); streams stop at once, new REQUESTs get the
   * same 401.
   */
  close(reason: string): void {
    if (this.closed || this.#closing !== undefined) return
    const error = new UnauthorizedException(reason)
    this.#closing = error
    for (const entry of this.inFlight.values()) if (entry.streaming) entry.abort(error)
    if (this.running === 0) {
      this.fail(error, 'session')
      return
    }
    const timer = setTimeout(() => this.fail(error, 'session'), this.#ctx.options.shutdownGraceMs)
    timer.unref()
    this.#drained = () => {
      clearTimeout(timer)
      this.fail(error, 'session')
    }
  }

  // ---- timers and shutdown (driven by the server) ----

  tick(now: number): void {
    if (this.closed) return
    if (this.#active) {
      this.#active = false
      this.lastActivity = now
    }
    this.#carrier.tick?.(now)
    if (this.closed) return
    if (this.running === 0 && now - this.lastActivity >= this.#ctx.options.idleTimeoutMs) {
      this.log.debug('idle timeout')
      this.#end('idle', 'Idle timeout')
    }
  }

  /**
   * Shutdown: GOAWAY, streams end with ERROR 503, unary calls get up to `graceMs` to answer, then the
   * rest are aborted and the connection closes.
   */
  async goAway(graceMs: number): Promise<void> {
    if (this.closed) return
    this.#carrier.sendFrame({
      type: FrameType.GOAWAY,
      requestId: 0,
      payload: textEncoder.encode(JSON.stringify({ reason: SHUTDOWN_MESSAGE })),
    })
    for (const entry of this.inFlight.values()) if (entry.streaming) entry.abort(this.#ctx.shutdownError)
    if (this.running > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs)
        this.#drained = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    this.#end('shutdown', SHUTDOWN_MESSAGE)
  }

  // ---- sending ----

  sendError(frameId: number, err: unknown): void {
    const { error, internal } = normalizeError(err)
    const requestId = `${this.id}:${frameId}`
    if (internal) this.log.error({ err, requestId }, 'unhandled error')
    this.#send(FrameType.ERROR, frameId, JSON.stringify(toErrorBody(error, requestId)))
  }

  #reject(frameId: number, err: TriviumError, reason: FrameRejectReason): void {
    publish(rejectedChannel, { transport: this.protocol, reason })
    this.sendError(frameId, err)
  }

  #end(kind: CloseKind, message: string): void {
    if (this.closed) return
    this.#cleanup()
    this.#carrier.close(kind, message)
  }

  #cleanup(): void {
    if (this.closed) return
    this.closed = true
    this.#cancelExpiry?.()
    const closedError = new Error('connection closed')
    for (const entry of this.inFlight.values()) entry.abort(closedError)
    this.inFlight.clear()
    this.#inboxes.clear()
    this.#ctx.hub.delete(this)
    this.#ctx.onClosed(this)
    this.#drained?.()
  }

  // ---- requests ----

  #admission(id: number): [TriviumError, FrameRejectReason] | undefined {
    if (this.#ctx.isShuttingDown())
      return [new ServiceUnavailableException(SHUTDOWN_MESSAGE), 'shutting_down']
    if (this.#closing !== undefined) return [this.#closing, 'session_closed']
    if (this.inFlight.has(id)) {
      return [new ValidationException(`Request id ${id} is already in flight`), 'duplicate_id']
    }
    const max = this.#ctx.options.maxInFlight
    if (this.running >= max) {
      return [
        new RateLimitExceededException(1, `Too many requests in flight on this connection (limit ${max})`),
        'in_flight_limit',
      ]
    }
    return undefined
  }

  #onRequest(frame: Frame): void {
    const id = frame.requestId
    const refusal = this.#admission(id)
    if (refusal) {
      this.#reject(id, refusal[0], refusal[1])
      return
    }
    let payload = frame.payload
    let metadata: Record<string, string> | undefined
    let format = this.#init.format
    const split = this.#init.splitRequest
    if (split !== undefined) {
      let parts: RequestParts
      try {
        parts = split(frame.payload)
      } catch (err) {
        this.#reject(id, new ValidationException((err as Error).message), 'bad_metadata')
        return
      }
      payload = parts.payload
      metadata = parts.metadata
      if (parts.formatName !== undefined) {
        const named = this.#ctx.trivium.formats.get(parts.formatName)
        if (named === undefined) {
          this.#reject(
            id,
            new UnsupportedMediaTypeException(`Unsupported format: ${parts.formatName}`),
            'bad_format',
          )
          return
        }
        format = named
      }
    }
    const endpoint = frame.endpoint as string
    const definition = this.#ctx.trivium.registry.get(endpoint)
    let inbox: RequestInbox | undefined
    if (definition?.requestStream) {
      const max = this.#ctx.options.maxClientStreams
      if (this.#inboxes.size >= max) {
        this.#reject(
          id,
          new RateLimitExceededException(1, `Too many client streams open on this connection (limit ${max})`),
          'in_flight_limit',
        )
        return
      }
      if (payload.length > 0) {
        this.#reject(
          id,
          new ValidationException(
            "A client stream's REQUEST carries no request model: send the requests as CLIENT_ITEM frames",
          ),
          'client_stream',
        )
        return
      }
    }
    // Client streams are streams too: shutdown and closeSessions stop them at once.
    const entry = new Cancellation(definition?.streaming === true || definition?.requestStream === true)
    if (definition?.requestStream) {
      const carrier = this.#carrier
      inbox = new RequestInbox(
        id,
        entry,
        definition,
        format,
        this.#ctx.options.clientStreamWindowBytes,
        (type, body) => {
          if (!entry.aborted && carrier.open) carrier.sendBody(type, id, body)
        },
      )
      this.#inboxes.set(id, inbox)
      this.#endedEarly.delete(id)
    }
    this.inFlight.set(id, entry)
    this.running++
    this.#run(endpoint, definition, id, payload, metadata, format, entry, inbox)
  }

  /** A CLIENT_ITEM or CLIENT_END (PROTOCOL.md "Client and bidirectional streams"). */
  #onClientFrame(frame: Frame): void {
    const id = frame.requestId
    const inbox = this.#inboxes.get(id)
    if (inbox === undefined) {
      if (this.#endedEarly.has(id)) {
        // Sent before the client saw the stream's end: dropped; its half-close ends the memory of it.
        if (frame.type === FrameType.CLIENT_END) this.#endedEarly.delete(id)
        return
      }
      // A unary call or server stream with this id is cancelled: this ERROR is its one answer.
      const entry = this.inFlight.get(id)
      if (entry !== undefined) {
        this.inFlight.delete(id)
        entry.abort(new Error('refused: not a client stream'))
      }
      this.#reject(
        id,
        new ValidationException(`No client stream ${id} is open on this connection`),
        'client_stream',
      )
      return
    }
    const violation = frame.type === FrameType.CLIENT_ITEM ? inbox.item(frame.payload) : inbox.end()
    if (violation === undefined) return
    // The stream is broken: the call ends, answered by this ERROR only.
    inbox.cancelled = true
    this.#inboxes.delete(id)
    if (this.inFlight.get(id) === inbox.entry) this.inFlight.delete(id)
    inbox.entry.abort(new Error('refused: client stream protocol violation'))
    this.#reject(id, new ValidationException(violation), 'client_stream')
  }

  /**
   * Runs one call. Not async: when the pipeline and the handler answer synchronously (no middleware
   * waiting on I/O, a handler that returns a value) the response is queued in this turn, with no promise
   * or microtask per call; a promise or a stream continues in `#complete`, the inject bridge in `#runBridged`.
   */
  #run(
    endpoint: string,
    known: EndpointDefinition | undefined,
    id: number,
    payload: Uint8Array,
    metadata: Record<string, string> | undefined,
    format: WireFormat,
    entry: Cancellation,
    requests: RequestInbox | undefined,
  ): void {
    const requestId = `${this.id}:${id}`
    let started: StartedCall
    try {
      // Metadata travels per frame (TCP): its credential is read now (a map lookup, never throws).
      const credential = metadata === undefined ? this.#connectionCredential : this.#init.credential(metadata)
      if (known !== undefined && isNamedRoute(known)) {
        const token = typeof credential === 'function' ? credential() : credential
        void this.#runBridged(this.#ctx.routes, known, id, requestId, payload, metadata, format, entry, token)
        return
      }
      if (this.#ctx.bridge !== undefined && known !== undefined && !known.streaming && !known.requestStream) {
        void this.#runBridged(this.#ctx.bridge, known, id, requestId, payload, metadata, format, entry)
        return
      }
      started = this.#ctx.trivium.start({
        endpoint,
        protocol: this.protocol,
        payload,
        format,
        requestId,
        log: this.log,
        headers: this.#init.headers,
        query: this.#init.query,
        metadata,
        clientIp: this.clientIp,
        credential,
        signal: entry.lazySignal,
        connection: this.state,
        requests,
        onIdentity: this.#onIdentity,
      })
      // The endpoint's deadline bounds the whole stream: a handler waiting for an item is woken by it.
      if (requests !== undefined && started.call.definition.timeoutMs !== undefined) {
        const signal = started.call.signal
        signal.addEventListener('abort', () => requests.fail(signal.reason), { once: true })
      }
      const result = started.result
      if (!started.call.definition.streaming && !isThenable(result)) {
        this.#respond(id, started.call, result, format, entry)
        this.#settle(id, entry)
        return
      }
    } catch (err) {
      this.#failed(id, err, entry)
      this.#settle(id, entry)
      return
    }
    void this.#complete(id, started.call, started.result, format, entry)
  }

  /** The rest of a call whose answer is a promise, or a stream. */
  async #complete(
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
        this.#learnIdentity(call)
        await this.#pump(
          id,
          definition,
          responseFormat(definition, format),
          result as AsyncIterable<unknown>,
          entry.signal,
        )
      } else {
        this.#respond(id, call, result, format, entry)
      }
    } catch (err) {
      this.#failed(id, err, entry)
    } finally {
      this.#release(id, entry, call)
    }
  }

  /** A unary call through the TCP inject bridge: the route's own HTTP response, already encoded. */
  async #runBridged(
    bridge: UnaryBridge,
    definition: EndpointDefinition,
    id: number,
    requestId: string,
    payload: Uint8Array,
    metadata: Record<string, string> | undefined,
    format: WireFormat,
    entry: Cancellation,
    credential?: string,
  ): Promise<void> {
    const override: TransportOverride = {
      protocol: this.protocol,
      clientIp: this.clientIp,
      connection: this.state,
      onIdentity: this.#onIdentity,
    }
    if (metadata !== undefined) override.metadata = metadata
    if (credential !== undefined) override.credential = credential
    let answered: TriviumCall | undefined
    try {
      const out = await bridge.call(
        definition,
        format,
        responseFormat(definition, format),
        payload,
        override,
        entry,
      )
      answered = out.call
      if (out.call) this.#learnIdentity(out.call)
      if (entry.aborted || !this.#carrier.open) return
      if (out.ok) this.#send(FrameType.RESPONSE, id, out.body)
      else this.#send(FrameType.ERROR, id, withRequestId(out.body, requestId))
    } catch (err) {
      this.#failed(id, err, entry)
    } finally {
      this.#release(id, entry, answered)
    }
  }

  /** A unary call's value as its RESPONSE frame (nothing when the call was cancelled or the carrier closed). */
  #respond(id: number, call: TriviumCall, result: unknown, format: WireFormat, entry: Cancellation): void {
    this.#learnIdentity(call)
    if (entry.aborted || !this.#carrier.open) return
    const definition = call.definition
    this.#send(FrameType.RESPONSE, id, responseFormat(definition, format).encode(definition.response, result))
  }

  #failed(id: number, err: unknown, entry: Cancellation): void {
    if (!entry.aborted) this.sendError(id, err)
    else if (entry.reason === this.#ctx.shutdownError) this.sendError(id, entry.reason)
  }

  /**
   * A call is answered: settled now, or — answered at its deadline while its handler runs on — its id is
   * free now and it counts toward maxInFlight until the handler returns (as a cancelled one does).
   */
  #release(id: number, entry: Cancellation, call: TriviumCall | undefined): void {
    const running = call === undefined ? undefined : handlerSettled(call)
    if (running === undefined) {
      this.#settle(id, entry)
      return
    }
    if (this.inFlight.get(id) === entry) this.inFlight.delete(id)
    entry.abort(new Error('deadline exceeded'))
    void running.then(() => this.#settle(id, entry))
  }

  /** A call is over: its id is free again, and a drain waiting for the last call is told. */
  #settle(id: number, entry: Cancellation): void {
    const inbox = this.#inboxes.get(id)
    if (inbox?.entry === entry) {
      this.#inboxes.delete(id)
      inbox.close()
      // Answered before the client's half-close: items it sent meanwhile are dropped, not refused.
      if (!inbox.ended && !inbox.cancelled) this.#rememberEnded(id)
    }
    // A CANCEL may have freed the id and a new call taken it: only remove this call's own entry.
    // Only an aborted entry can have left the map (CANCEL, close), so the lookup is for those.
    if (!entry.aborted || this.inFlight.get(id) === entry) this.inFlight.delete(id)
    this.running--
    this.#active = true
    if (this.running === 0) this.#drained?.()
  }

  #rememberEnded(id: number): void {
    if (this.#endedEarly.size >= REMEMBERED_ENDED_STREAMS) {
      const oldest = this.#endedEarly.values().next().value as number
      this.#endedEarly.delete(oldest)
    }
    this.#endedEarly.add(id)
  }

  async #onSubscribe(frame: Frame): Promise<void> {
    const topic = frame.topic as string
    try {
      const authorize = this.#ctx.options.authorizeSubscribe
      if (authorize && !(await authorize(topic, { userId: this.userId, id: this.id }))) {
        throw new ForbiddenException(`Not allowed to subscribe to ${topic}`)
      }
      if (this.closed) return
      if (!this.#ctx.hub.subscribe(this, topic)) {
        throw new ValidationException('Too many subscriptions on this connection')
      }
      this.#carrier.sendBody(FrameType.RESPONSE, frame.requestId, EMPTY)
    } catch (err) {
      this.sendError(frame.requestId, err)
    }
  }

  /** Sends items as the generator yields them; waits for the socket when over the high-water mark. */
  async #pump(
    id: number,
    definition: EndpointDefinition,
    format: WireFormat,
    items: AsyncIterable<unknown>,
    signal: AbortSignal,
  ): Promise<void> {
    const iterator = items[Symbol.asyncIterator]()
    // One listener for the stream's life; each item's wait leaves nothing behind (PROTOCOL.md "Streams
    // hold constant memory").
    const aborted = new StreamStop()
    const onAbort = (): void => aborted.stop(signal.reason)
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    const carrier = this.#carrier
    try {
      while (true) {
        const step = await aborted.wait(iterator.next())
        if (step === STOPPED) break
        if (step.done) {
          carrier.sendBody(FrameType.STREAM_END, id, EMPTY)
          break
        }
        this.#send(FrameType.STREAM_ITEM, id, encodePayload(definition, format, step.value))
        if (carrier.backlog > this.#ctx.options.highWaterMark) await carrier.drain(signal)
        if (signal.aborted || !carrier.open) break
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      // Stops the generator (its finally runs). Not awaited: a generator stuck in an await that ignores
      // call.signal must not hold the connection.
      iterator.return?.()?.catch?.(noop)
    }
    if (signal.aborted && signal.reason === this.#ctx.shutdownError) throw signal.reason
  }

  // ---- identity and expiry ----

  /**
   * Learnt again when a call answers or its stream starts: middleware may complete the identity after
   * setting it (its expiry, say), which `#onIdentity` saw before.
   */
  #learnIdentity(call: TriviumCall): void {
    const identity = call.identity
    if (identity !== undefined && !this.closed) this.#adoptIdentity(identity)
  }

  #adoptIdentity(identity: ConnectionIdentity): void {
    const { expiresAt } = identity
    // The session ends at the earliest expiry seen: a fresher token does not extend it (reconnect).
    if (
      typeof expiresAt === 'number' &&
      Number.isFinite(expiresAt) &&
      (this.expiresAt === undefined || expiresAt < this.expiresAt)
    ) {
      this.expiresAt = expiresAt
      this.#armExpiry()
    }
    const userId = String(identity.userId)
    if (this.userId === userId && (identity.tokenId === undefined || this.tokenId === identity.tokenId))
      return
    this.#ctx.hub.identify(this, identity.userId, identity.tokenId)
  }

  #armExpiry(): void {
    this.#cancelExpiry?.()
    this.#cancelExpiry = atExpiry(this.expiresAt as number, () => {
      this.#cancelExpiry = undefined
      this.fail(new TokenExpiredException(TOKEN_EXPIRED_MESSAGE), 'session')
    })
  }
}

function responseFormat(definition: EndpointDefinition, format: WireFormat): WireFormat {
  // A response model without a binary form is sent as JSON (as on HTTP).
  return format !== jsonFormat && !definition.response.encode ? jsonFormat : format
}

function publish(ch: ReturnType<typeof channel>, message: object): void {
  if (ch.hasSubscribers) ch.publish(message)
}

/** Rewrites an injected error body's requestId (the Fastify request's id) to `<connection>:<frame id>`. */
function withRequestId(body: Uint8Array, requestId: string): Uint8Array | string {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body))
    if (parsed && typeof parsed === 'object') {
      parsed.requestId = requestId
      return JSON.stringify(parsed)
    }
  } catch {
    /* not JSON: pass through */
  }
  return body
}
