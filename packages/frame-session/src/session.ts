// One frame connection, whatever carries its bytes (PROTOCOL.md "Frames"): admission of request ids,
// calls through core's pipeline (or the TCP inject bridge), stream pumping with backpressure, CANCEL,
// SUBSCRIBE with authorization, push, identity and token expiry, idle timeout and GOAWAY.
import { channel } from 'node:diagnostics_channel'
import {
  ForbiddenException,
  type FrameRejectReason,
  normalizeError,
  TokenExpiredException,
  TRIVIUM_CHANNELS,
  type Trivium,
  type TriviumError,
  type TriviumIdentity,
  toErrorBody,
  UnauthorizedException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import {
  cancelExpiry,
  type Expiring,
  expireAt,
  type HeaderMap,
  SHUTDOWN_MESSAGE,
  TOKEN_EXPIRED_MESSAGE,
} from '@trivium/core/internal'
import {
  Cancellation,
  type Frame,
  FrameError,
  FrameType,
  frameBody,
  frameTypeName,
  INTERNAL_ERROR_MESSAGE,
} from '@trivium/wire'
import type { Session, SessionHub } from '@trivium/wire/sessions'
import type { FastifyBaseLogger } from 'fastify'
import { admissionRefusal, clientStreamRefusal, frameRefusal, requestFormat } from './admission.js'
import type { CloseKind, FrameCarrier, RequestParts } from './carrier.js'
import { SessionCompression } from './compression.js'
import { ownLogger } from './connection-logger.js'
import { type CallIds, CallTable } from './flow-control.js'
import type { ResolvedFrameSessionOptions } from './options.js'
import type { RequestInbox } from './request-stream.js'
import { type CallHost, hostIdentity, runCall, type UnaryBridge } from './unary.js'

const EMPTY = new Uint8Array(0)
const textEncoder = new TextEncoder()

/** What a frame transport tells callers while it shuts down (ERROR 503 and the GOAWAY reason). */
/** The spec's message for an expired token; also sent (ERROR id 0) when a session's token expires. */
export { SHUTDOWN_MESSAGE, TOKEN_EXPIRED_MESSAGE }

const rejectedChannel = channel(TRIVIUM_CHANNELS.frameRejected)
const pushChannel = channel(TRIVIUM_CHANNELS.push)

/** Who a connection is before any call (the WebSocket `identify` hook at upgrade time). */
export type ConnectionIdentity = Pick<TriviumIdentity, 'userId' | 'tokenId' | 'expiresAt'>

export type { BridgedCall, BridgedOutcome, UnaryBridge } from './unary.js'

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
  /**
   * The bearer credential of a call, from the frame's metadata or the connection (may throw). Called with
   * no `this`. Absent: core's default for the protocol (WebSocket: the `token` query value, then the
   * Authorization header, of `query` and `headers`; TCP: the metadata's `auth_token`), with no function
   * per session (bench/density).
   */
  credential?(metadata: Record<string, string> | undefined): string | undefined
  /** Splits a REQUEST payload into metadata and model (TCP); absent: the payload is the model. */
  splitRequest?(payload: Uint8Array): RequestParts
}

export class FrameSession implements Session, Expiring {
  readonly id: string
  readonly protocol: 'websocket' | 'tcp'
  userId: string | undefined = undefined
  tokenId: string | undefined = undefined
  /** The push topics subscribed to, made at the first SUBSCRIBE (an idle connection holds no set). */
  #topics: Set<string> | undefined = undefined
  readonly clientIp: string | undefined
  /** The connection's logger (a connection logger until its child is made, then the child: connection-logger.ts). */
  log: FastifyBaseLogger
  /** Per-connection state shared by every call (`call.connection`). */
  readonly state: Record<string, unknown>
  /** The calls in flight and the handlers running (flow-control.ts). */
  readonly #calls: CallTable
  readonly #compression: SessionCompression
  /** What the call runner uses of this session (unary.ts). */
  readonly #host: CallHost
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
  /** Set by `close(reason)` while the calls in flight are still being answered. */
  #closing: UnauthorizedException | undefined

  constructor(carrier: FrameCarrier, ctx: SessionContext, init: SessionInit) {
    this.#carrier = carrier
    this.#ctx = ctx
    this.id = init.id
    this.protocol = ctx.transport
    this.clientIp = init.clientIp
    this.log = init.log
    ownLogger(init.log, this)
    this.state = { id: init.id, protocol: ctx.transport }
    this.#compression = new SessionCompression(carrier, ctx.options.compressionThreshold)
    this.#calls = new CallTable(this)
    this.#host = {
      session: this,
      ctx,
      carrier,
      calls: this.#calls,
      compression: this.#compression,
      // The init's parts the calls use, here rather than the init kept beside the host (bench/density).
      format: init.format,
      headers: init.headers,
      query: init.query,
      credential: init.credential,
      splitRequest: init.splitRequest,
      connectionCredential: undefined,
      onIdentity: hostIdentity,
      requestIdPrefix: `${init.id}:`,
    }
  }

  get topics(): Set<string> {
    this.#topics ??= new Set()
    return this.#topics
  }

  /** Calls by request id; an id leaves at its answer or the moment its CANCEL is read. */
  get inFlight(): CallIds {
    return this.#calls.inFlight
  }

  /** Handlers still running, cancelled ones included: `maxInFlight` bounds this. */
  get running(): number {
    return this.#calls.running
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
          this.#calls.streams?.forgetEnded(frame.requestId)
          const entry = this.#calls.inFlight.get(frame.requestId)
          if (entry === undefined) return
          this.#calls.inFlight.delete(frame.requestId)
          this.#calls.streams?.cancel(frame.requestId, entry)
          entry.abort(new Error('cancelled by the client'))
          return
        }
        case FrameType.CLIENT_ITEM:
        case FrameType.CLIENT_END: {
          const refusal = this.#calls.clientStreams.receive(frame, this.#calls)
          if (refusal !== undefined) this.#reject(frame.requestId, refusal[0], refusal[1])
          return
        }
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
      this.#end('internal', INTERNAL_ERROR_MESSAGE)
    }
  }

  /**
   * A frame received with the compression flag (PROTOCOL.md "Compression"): the offer (PING) is answered
   * here; any other is inflated within the carrier's frame limit. Undefined: nothing more to do.
   */
  #inflate(frame: Frame): Frame | undefined {
    const compression = this.#compression
    if (frame.type === FrameType.PING || frame.type === FrameType.PONG) {
      compression.answerOffer(frame)
      return undefined
    }
    if (compression.threshold === undefined) {
      const message = 'Compressed frames are not enabled on this server'
      this.#reject(frame.requestId, new ValidationException(message), 'malformed')
      this.#end('protocol', message)
      return undefined
    }
    try {
      return compression.inflate(frame)
    } catch (err) {
      this.rejectFrame(err, true)
      return undefined
    }
  }

  /** An undecodable frame: ERROR for its id (0 when unreadable); `fatal` (stream out of sync) then closes. */
  rejectFrame(err: unknown, fatal: boolean): void {
    if (this.closed) return
    const [typed, reason] = frameRefusal(err)
    this.#reject((err instanceof FrameError ? err.requestId : undefined) ?? 0, typed, reason)
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
      if (!this.#compression.active) this.#carrier.sendFrame(frame)
      else this.#compression.send(FrameType.PUSH, 0, frameBody(frame))
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
    this.#calls.abortStreams(error)
    this.#calls.afterDrain(this.#ctx.options.shutdownGraceMs, false, () => this.fail(error, 'session'))
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

  /** Shutdown: GOAWAY, streams end with ERROR 503, unary calls get `graceMs` to answer, the rest are aborted. */
  async goAway(graceMs: number): Promise<void> {
    if (this.closed) return
    this.#carrier.sendFrame({
      type: FrameType.GOAWAY,
      requestId: 0,
      payload: textEncoder.encode(JSON.stringify({ reason: SHUTDOWN_MESSAGE })),
    })
    this.#calls.abortStreams(this.#ctx.shutdownError)
    if (this.running > 0) await new Promise<void>((resolve) => this.#calls.afterDrain(graceMs, true, resolve))
    this.#end('shutdown', SHUTDOWN_MESSAGE)
  }

  // ---- sending ----

  sendError(frameId: number, err: unknown): void {
    const { error, internal } = normalizeError(err)
    const requestId = this.#host.requestIdPrefix + frameId
    if (internal) this.log.error({ err, requestId }, 'unhandled error')
    this.#compression.send(FrameType.ERROR, frameId, JSON.stringify(toErrorBody(error, requestId)))
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
    if (this.expiresAt !== undefined) cancelExpiry(this, this.expiresAt)
    this.#calls.abortAll(new Error('connection closed'))
    this.#calls.streams?.clear()
    this.#ctx.hub.delete(this)
    this.#ctx.onClosed(this)
    this.#calls.closed()
  }

  // ---- requests ----

  #onRequest(frame: Frame): void {
    const id = frame.requestId
    const calls = this.#calls
    const ctx = this.#ctx
    const refusal = admissionRefusal(id, ctx.isShuttingDown(), this.#closing, calls, ctx.options.maxInFlight)
    if (refusal) {
      this.#reject(id, refusal[0], refusal[1])
      return
    }
    let payload = frame.payload
    let metadata: Record<string, string> | undefined
    let credential: string | null | undefined, timeout: string | null | undefined
    let format = this.#host.format
    const split = this.#host.splitRequest
    if (split !== undefined) {
      // The carrier's parts are used as they are (no object per frame beyond the carrier's own).
      let parts: RequestParts
      try {
        parts = split(payload)
      } catch (err) {
        this.#reject(id, new ValidationException((err as Error).message), 'bad_metadata')
        return
      }
      const chosen = requestFormat(parts, ctx.trivium, format)
      if (Array.isArray(chosen)) {
        this.#reject(id, chosen[0], chosen[1])
        return
      }
      payload = parts.payload
      metadata = parts.metadata
      credential = parts.credential
      timeout = parts.timeout
      format = chosen
    }
    const endpoint = frame.endpoint as string
    const definition = this.#ctx.trivium.registry.get(endpoint)
    let requests: RequestInbox | undefined
    if (definition?.requestStream) {
      const streamRefusal = clientStreamRefusal(
        definition,
        payload,
        this.#calls.clientStreams,
        this.#ctx.options.maxClientStreams,
      )
      if (streamRefusal) {
        this.#reject(id, streamRefusal[0], streamRefusal[1])
        return
      }
    }
    // Client streams are streams too: shutdown and closeSessions stop them at once.
    const entry = new Cancellation(definition?.streaming === true || definition?.requestStream === true)
    if (definition?.requestStream) {
      const window = this.#ctx.options.clientStreamWindowBytes
      requests = this.#calls.clientStreams.open(id, entry, definition, format, window, this.#carrier)
    }
    calls.start(id, entry)
    runCall(
      this.#host,
      endpoint,
      definition,
      id,
      payload,
      metadata,
      credential,
      timeout,
      format,
      entry,
      requests,
    )
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

  // ---- identity and expiry ----

  #adoptIdentity(identity: ConnectionIdentity): void {
    // Each field read once: auth's identity is a Proxy (its verified fields are read-only), where every
    // read takes the slow path (~60 ns here; this runs twice per authenticated call).
    const { expiresAt, userId: given, tokenId } = identity
    // The session ends at the earliest expiry seen: a fresher token does not extend it (reconnect).
    if (
      typeof expiresAt === 'number' &&
      Number.isFinite(expiresAt) &&
      (this.expiresAt === undefined || expiresAt < this.expiresAt)
    ) {
      // The session itself is the entry of the process's expiry slots (no timer, closure or entry of its own).
      if (this.expiresAt !== undefined) cancelExpiry(this, this.expiresAt)
      this.expiresAt = expiresAt
      expireAt(this, expiresAt)
    }
    const userId = typeof given === 'string' ? given : String(given)
    if (this.userId === userId && (tokenId === undefined || this.tokenId === tokenId)) return
    this.#ctx.hub.identify(this, given, tokenId)
  }

  /** `expiresAt` has come (core's expiry slots call it): ERROR id 0 TokenExpiredException, then close. */
  tokenExpired(): void {
    this.fail(new TokenExpiredException(TOKEN_EXPIRED_MESSAGE), 'session')
  }
}

function publish(ch: ReturnType<typeof channel>, message: object): void {
  if (ch.hasSubscribers) ch.publish(message)
}
