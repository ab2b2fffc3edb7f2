// One WebSocket connection: decodes frames, runs calls through core's pipeline, answers by request id,
// pumps streams with backpressure, delivers pushes. Every entry point catches its own errors.
import {
  type EndpointDefinition,
  encodePayload,
  ForbiddenException,
  jsonFormat,
  normalizeError,
  PayloadTooLargeException,
  refuseRequest,
  SHUTDOWN_MESSAGE,
  type Trivium,
  type TriviumCall,
  toErrorBody,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import {
  Cancellation,
  decodeWsFrame,
  encodeWsFrame,
  type Frame,
  FrameError,
  FrameType,
  frameTypeName,
} from '@trivium/wire'
import type { Session, SessionHub } from '@trivium/wire/sessions'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { WebSocket } from 'ws'
import { CloseCode } from './close-codes.js'
import type { ConnectionIdentity, ResolvedOptions } from './options.js'

const EMPTY = new Uint8Array(0)
const OPEN = 1
const textEncoder = new TextEncoder()
const ABORTED = Symbol('aborted')
const noop = (): void => {}

export { SHUTDOWN_MESSAGE }

/** What connections share: set up once by the plugin. */
export interface ConnectionContext {
  trivium: Trivium
  hub: SessionHub
  options: ResolvedOptions
  isShuttingDown(): boolean
  /** Abort reason used at shutdown: streams end with an ERROR frame carrying it. */
  shutdownError: Error
  onClosed(connection: Connection): void
}

/** The `net.Socket` under a `ws` WebSocket (ws keeps it as `_socket`), for corking. */
interface Corkable {
  cork(): void
  uncork(): void
}

/** A RESPONSE frame (`02 | id | payload`) written straight from the encoder's output: one allocation. */
function responseFrame(requestId: number, out: Uint8Array | string): Buffer {
  const size = typeof out === 'string' ? Buffer.byteLength(out) : out.length
  const bytes = Buffer.allocUnsafe(5 + size)
  bytes[0] = FrameType.RESPONSE
  bytes.writeUInt32BE(requestId, 1)
  if (typeof out === 'string') bytes.write(out, 5, 'utf8')
  else bytes.set(out, 5)
  return bytes
}

export class Connection implements Session {
  readonly protocol = 'websocket'
  userId: string | undefined = undefined
  tokenId: string | undefined = undefined
  readonly topics = new Set<string>()
  /** Per-connection state shared by every call (`call.connection`). */
  readonly state: Record<string, unknown>
  readonly inFlight = new Map<number, Cancellation>()
  lastActivity = Date.now()
  lastPingAt = Date.now()
  alive = true
  closed = false
  readonly log: FastifyBaseLogger
  #expiryTimer: NodeJS.Timeout | undefined
  #drained: (() => void) | undefined
  /** Frames sent in one event-loop turn leave in one socket write: the socket is corked until then. */
  readonly #raw: Corkable | undefined
  #corked = false
  readonly #uncork = (): void => {
    this.#corked = false
    this.#raw?.uncork()
  }

  constructor(
    readonly id: string,
    readonly socket: WebSocket,
    readonly request: FastifyRequest,
    readonly format: WireFormat,
    private readonly ctx: ConnectionContext,
  ) {
    this.log = request.log.child({ connection: id })
    this.state = { id, protocol: 'websocket' }
    const raw = (socket as unknown as { _socket?: Partial<Corkable> })._socket
    this.#raw =
      typeof raw?.cork === 'function' && typeof raw.uncork === 'function' ? (raw as Corkable) : undefined
    socket.on('message', (data, isBinary) => this.#onMessage(data as Buffer, isBinary))
    socket.on('pong', () => {
      this.alive = true
    })
    socket.on('error', (err) => this.log.debug({ err }, 'websocket error'))
    socket.on('close', () => this.#cleanup())
  }

  /** Applies an identity found at upgrade time. */
  identify(identity: ConnectionIdentity): void {
    this.ctx.hub.identify(this, identity.userId, identity.tokenId)
    if (identity.expiresAt !== undefined) this.#scheduleExpiry(identity.expiresAt)
  }

  // ---- Session (hub) ----

  push(topic: string, json: string): void {
    try {
      if (this.closed || this.socket.readyState !== OPEN) return
      if (this.socket.bufferedAmount > this.ctx.options.maxPushBacklog) {
        this.end(CloseCode.SLOW_CONSUMER, 'Push backlog over limit')
        return
      }
      this.send({ type: FrameType.PUSH, requestId: 0, topic, payload: textEncoder.encode(json) })
    } catch (err) {
      this.log.error({ err }, 'push failed')
    }
  }

  close(reason: string): void {
    this.end(CloseCode.SESSION_REVOKED, reason)
  }

  // ---- lifecycle ----

  /** Liveness and idle check, called by the plugin's timer. */
  tick(now: number): void {
    if (this.closed) return
    const { pingIntervalMs, idleTimeoutMs } = this.ctx.options
    if (this.inFlight.size === 0 && now - this.lastActivity >= idleTimeoutMs) {
      this.end(CloseCode.IDLE_TIMEOUT, 'Idle timeout')
      return
    }
    if (now - this.lastPingAt < pingIntervalMs) return
    if (!this.alive) {
      this.log.debug('no pong: terminating')
      this.socket.terminate()
      this.#cleanup()
      return
    }
    this.alive = false
    this.lastPingAt = now
    try {
      this.socket.ping()
    } catch {
      /* closing */
    }
  }

  /** Closes with a code; aborts everything in flight. */
  end(code: number, reason: string): void {
    if (this.closed) return
    this.#cleanup()
    this.#uncork() // what was sent this turn goes before the close frame (and before a terminate)
    try {
      this.socket.close(code, reason)
    } catch {
      this.socket.terminate()
    }
  }

  /** Shutdown: GOAWAY, end streams with an ERROR, wait for unary calls (up to `graceMs`), close 1001. */
  async goAway(graceMs: number): Promise<void> {
    if (this.closed) return
    this.send({
      type: FrameType.GOAWAY,
      requestId: 0,
      payload: textEncoder.encode(JSON.stringify({ reason: SHUTDOWN_MESSAGE })),
    })
    for (const entry of this.inFlight.values()) {
      if (entry.streaming) entry.abort(this.ctx.shutdownError)
    }
    if (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs)
        this.#drained = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    this.end(CloseCode.GOING_AWAY, SHUTDOWN_MESSAGE)
  }

  #cleanup(): void {
    if (this.closed) return
    this.closed = true
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer)
    for (const entry of this.inFlight.values()) entry.abort(new Error('connection closed'))
    this.ctx.hub.delete(this)
    this.ctx.onClosed(this)
    this.#drained?.()
  }

  #scheduleExpiry(expiresAt: number): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer)
    const delay = Math.max(0, Math.min(expiresAt - Date.now(), 2 ** 31 - 1))
    this.#expiryTimer = setTimeout(() => this.end(CloseCode.SESSION_REVOKED, 'Token expired'), delay)
    this.#expiryTimer.unref()
  }

  // ---- sending ----

  /** Sends a frame; with `flush`, resolves once the bytes are handed to the OS (or the socket closed). */
  send(frame: Frame, flush = false): Promise<void> | undefined {
    if (this.socket.readyState !== OPEN) return undefined
    return this.#sendBytes(encodeWsFrame(frame), flush)
  }

  #sendBytes(bytes: Uint8Array, flush: boolean): Promise<void> | undefined {
    if (!this.#corked && this.#raw) {
      this.#corked = true
      this.#raw.cork()
      setImmediate(this.#uncork)
    }
    if (!flush) {
      this.socket.send(bytes, { binary: true }, noop)
      return undefined
    }
    return new Promise((resolve) => this.socket.send(bytes, { binary: true }, () => resolve()))
  }

  sendError(frameId: number, err: unknown): void {
    const { error, internal } = normalizeError(err)
    const requestId = `${this.id}:${frameId}`
    if (internal) this.log.error({ err, requestId }, 'unhandled error')
    this.send({
      type: FrameType.ERROR,
      requestId: frameId,
      payload: textEncoder.encode(JSON.stringify(toErrorBody(error, requestId))),
    })
  }

  // ---- receiving ----

  #onMessage(data: Buffer, isBinary: boolean): void {
    try {
      this.lastActivity = Date.now()
      this.alive = true
      if (this.closed) return
      if (!isBinary) {
        this.end(CloseCode.UNSUPPORTED_DATA, 'Text frames are not supported')
        return
      }
      const bytes = data instanceof Uint8Array ? data : new Uint8Array(data as ArrayBuffer)
      let frame: Frame
      try {
        frame = decodeWsFrame(bytes, { maxFrameBytes: this.ctx.options.maxPayload })
      } catch (err) {
        this.#onFrameError(err, bytes)
        return
      }
      switch (frame.type) {
        case FrameType.REQUEST:
          this.#onRequest(frame)
          return
        case FrameType.CANCEL:
          this.inFlight.get(frame.requestId)?.abort(new Error('cancelled by the client'))
          return
        case FrameType.PING:
          this.send({ type: FrameType.PONG, requestId: frame.requestId, payload: EMPTY })
          return
        case FrameType.PONG:
          return
        case FrameType.SUBSCRIBE:
          void this.#onSubscribe(frame)
          return
        case FrameType.UNSUBSCRIBE:
          this.ctx.hub.unsubscribe(this, frame.topic as string)
          this.send({ type: FrameType.RESPONSE, requestId: frame.requestId, payload: EMPTY })
          return
        default:
          this.sendError(
            frame.requestId,
            new ValidationException(`Frame type ${frameTypeName(frame.type)} cannot be sent to the server`),
          )
      }
    } catch (err) {
      this.log.error({ err }, 'websocket message handler failed')
      this.end(CloseCode.INTERNAL_ERROR, 'Internal server error')
    }
  }

  #onFrameError(err: unknown, bytes: Uint8Array): void {
    if (!(err instanceof FrameError) || bytes.length < 5 || err.requestId === undefined) {
      this.end(CloseCode.PROTOCOL_ERROR, 'Malformed frame')
      return
    }
    const typed =
      err.code === 'TRV_FRAME_TOO_LARGE'
        ? new PayloadTooLargeException(err.message)
        : new ValidationException(err.message)
    this.sendError(err.requestId, typed)
  }

  async #onSubscribe(frame: Frame): Promise<void> {
    const topic = frame.topic as string
    try {
      const authorize = this.ctx.options.authorizeSubscribe
      if (authorize && !(await authorize(topic, { userId: this.userId, id: this.id }))) {
        throw new ForbiddenException(`Not allowed to subscribe to ${topic}`)
      }
      if (this.closed) return
      if (!this.ctx.hub.subscribe(this, topic))
        throw new ValidationException('Too many subscriptions on this connection')
      this.send({ type: FrameType.RESPONSE, requestId: frame.requestId, payload: EMPTY })
    } catch (err) {
      this.sendError(frame.requestId, err)
    }
  }

  #onRequest(frame: Frame): void {
    const id = frame.requestId
    const refusal = refuseRequest(id, this.inFlight, this.ctx.options.maxInFlight, this.ctx.isShuttingDown())
    if (refusal) {
      this.sendError(id, refusal)
      return
    }
    const streaming = this.ctx.trivium.registry.get(frame.endpoint as string)?.streaming === true
    const entry = new Cancellation(streaming)
    this.inFlight.set(id, entry)
    void this.#run(frame, entry)
  }

  async #run(frame: Frame, entry: Cancellation): Promise<void> {
    const id = frame.requestId
    try {
      const { definition, call, result } = await this.ctx.trivium.invoke({
        endpoint: frame.endpoint as string,
        protocol: 'websocket',
        payload: frame.payload,
        format: this.format,
        requestId: `${this.id}:${id}`,
        log: this.log,
        headers: this.request.headers,
        query: this.request.query as Record<string, unknown>,
        clientIp: this.request.ip,
        // core's TriviumCall takes a signal or a function that makes it on first use (CallInit.signal);
        // InvokeInit only types the former. The function spares an AbortController per call.
        signal: entry.lazySignal as unknown as AbortSignal,
        connection: this.state,
      })
      this.#learnIdentity(call)
      const format = this.#responseFormat(definition)
      if (definition.streaming) {
        await this.#pump(id, definition, format, result as AsyncIterable<unknown>, entry.signal)
      } else if (!entry.aborted && this.socket.readyState === OPEN) {
        this.#sendBytes(responseFrame(id, format.encode(definition.response, result)), false)
      }
    } catch (err) {
      if (!entry.aborted) this.sendError(id, err)
      else if (entry.reason === this.ctx.shutdownError) this.sendError(id, entry.reason)
    } finally {
      this.inFlight.delete(id)
      this.lastActivity = Date.now()
      if (this.inFlight.size === 0) this.#drained?.()
    }
  }

  #responseFormat(definition: EndpointDefinition): WireFormat {
    return this.format !== jsonFormat && !definition.response.encode ? jsonFormat : this.format
  }

  #learnIdentity(call: TriviumCall): void {
    const userId = call.context.user_id
    if (userId === undefined || userId === null || this.closed) return
    const claims = call.context.token_claims as { jti?: unknown; exp?: unknown } | undefined
    const jti = typeof claims?.jti === 'string' ? claims.jti : undefined
    if (this.userId === String(userId) && this.tokenId === jti) return
    this.ctx.hub.identify(this, userId as string | number, jti)
    if (typeof claims?.exp === 'number') this.#scheduleExpiry(claims.exp * 1000)
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
    let onAbort: () => void = noop
    const aborted = new Promise<typeof ABORTED>((resolve) => {
      onAbort = () => resolve(ABORTED)
      if (signal.aborted) resolve(ABORTED)
      else signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      while (true) {
        const next = iterator.next()
        next.catch(noop) // a rejection after an abort must not be unhandled
        const step = await Promise.race([next, aborted])
        if (step === ABORTED) break
        if (step.done) {
          this.send({ type: FrameType.STREAM_END, requestId: id, payload: EMPTY })
          break
        }
        const payload = encodePayload(definition, format, step.value)
        const slow = this.socket.bufferedAmount > this.ctx.options.highWaterMark
        const flushed = this.send({ type: FrameType.STREAM_ITEM, requestId: id, payload }, slow)
        if (flushed && (await Promise.race([flushed, aborted])) === ABORTED) break
        if (this.socket.readyState !== OPEN) break
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      // Stops the generator (its finally runs). Not awaited: a generator stuck in an await that ignores
      // call.signal must not hold the connection.
      iterator.return?.()?.catch?.(noop)
    }
    if (signal.aborted && signal.reason === this.ctx.shutdownError) throw signal.reason
  }
}
