// One TCP connection: reassembles frames, runs calls (direct pipeline or inject bridge), batches writes
// per event-loop turn, pumps streams with backpressure, times out stalled partial frames.
import type { Socket } from 'node:net'
import {
  type EndpointDefinition,
  encodePayload,
  jsonFormat,
  normalizeError,
  PayloadTooLargeException,
  refuseRequest,
  SHUTDOWN_MESSAGE,
  TokenExpiredException,
  type Trivium,
  type TriviumCall,
  toErrorBody,
  UnauthorizedException,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import {
  Cancellation,
  decodeMetadata,
  encodeTcpFrame,
  type Frame,
  FrameError,
  FrameType,
  frameTypeName,
  TcpFrameReader,
} from '@trivium/wire'
import type { Session, SessionHub } from '@trivium/wire/sessions'
import type { FastifyBaseLogger } from 'fastify'
import type { InjectBridge } from './inject.js'
import type { ResolvedTcpOptions } from './options.js'

const EMPTY = new Uint8Array(0)
const ABORTED = Symbol('aborted')
const noop = (): void => {}
const textEncoder = new TextEncoder()

export { SHUTDOWN_MESSAGE }
/** The spec's message for an expired token (auth middleware), also sent when a session's token expires. */
export const TOKEN_EXPIRED_MESSAGE = 'Token has expired'
/** setTimeout's largest delay; a later expiry re-arms the timer when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1

/** Expiry of a call's `token_claims` in ms: `expiresAt` (Date or ms) or `exp` (seconds, JWT). */
export function claimsExpiry(claims: unknown): number | undefined {
  if (typeof claims !== 'object' || claims === null) return undefined
  const { expiresAt, exp } = claims as { expiresAt?: unknown; exp?: unknown }
  const ms =
    expiresAt instanceof Date
      ? expiresAt.getTime()
      : typeof expiresAt === 'number'
        ? expiresAt
        : typeof exp === 'number'
          ? exp * 1000
          : undefined
  return ms !== undefined && Number.isFinite(ms) ? ms : undefined
}

export interface TcpContext {
  trivium: Trivium
  hub: SessionHub
  options: ResolvedTcpOptions
  bridge: InjectBridge | undefined
  log: FastifyBaseLogger
  isShuttingDown(): boolean
  shutdownError: Error
  onClosed(c: TcpConnection): void
}

/** A frame (`length | id | type | payload`) with the payload copied or written in once: one allocation. */
function frameBytes(type: number, requestId: number, out: Uint8Array | string): Buffer {
  const size = typeof out === 'string' ? Buffer.byteLength(out) : out.length
  const bytes = Buffer.allocUnsafe(9 + size)
  bytes.writeUInt32BE(5 + size, 0)
  bytes.writeUInt32BE(requestId, 4)
  bytes[8] = type
  if (typeof out === 'string') bytes.write(out, 9, 'utf8')
  else bytes.set(out, 9)
  return bytes
}

export class TcpConnection implements Session {
  readonly protocol = 'tcp'
  userId: string | undefined = undefined
  tokenId: string | undefined = undefined
  readonly topics = new Set<string>()
  readonly state: Record<string, unknown>
  readonly inFlight = new Map<number, Cancellation>()
  readonly clientIp: string | undefined
  readonly log: FastifyBaseLogger
  lastActivity = Date.now()
  partialSince = 0
  closed = false
  readonly #reader: TcpFrameReader
  #queue: Uint8Array[] = []
  #queuedBytes = 0
  #flushScheduled = false
  #drained: (() => void) | undefined
  #expiryTimer: NodeJS.Timeout | undefined
  /** Earliest token expiry (ms since epoch) seen on a successful authenticated call. */
  expiresAt: number | undefined = undefined

  constructor(
    readonly id: string,
    readonly socket: Socket,
    private readonly ctx: TcpContext,
  ) {
    this.clientIp = socket.remoteAddress
    this.log = ctx.log.child({ connection: id })
    this.state = { id, protocol: 'tcp' }
    this.#reader = new TcpFrameReader({ maxFrameBytes: ctx.options.maxFrameBytes })
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('error', (err) => this.log.debug({ err }, 'tcp socket error'))
    socket.on('close', () => this.#cleanup())
  }

  // ---- Session ----
  push(topic: string, json: string): void {
    try {
      if (this.closed) return
      if (this.#queuedBytes + this.socket.writableLength > this.ctx.options.maxPushBacklog) {
        this.log.warn('push backlog over limit: closing')
        this.socket.destroy()
        return
      }
      this.send({ type: FrameType.PUSH, requestId: 0, topic, payload: textEncoder.encode(json) })
    } catch (err) {
      this.log.error({ err }, 'push failed')
    }
  }

  close(reason: string): void {
    this.fail(0, new UnauthorizedException(reason))
  }

  // ---- timers (driven by the plugin) ----
  tick(now: number): void {
    if (this.closed) return
    const { idleTimeoutMs, partialFrameTimeoutMs } = this.ctx.options
    if (this.#reader.bufferedBytes > 0 && now - this.partialSince >= partialFrameTimeoutMs) {
      this.fail(0, new ValidationException('Incomplete frame timed out'))
      return
    }
    if (this.inFlight.size === 0 && now - this.lastActivity >= idleTimeoutMs) {
      this.log.debug('idle timeout')
      this.#flush()
      this.socket.end()
      this.#cleanup()
    }
  }

  /** Sends an ERROR frame for `frameId`, then closes the connection. */
  fail(frameId: number, err: unknown): void {
    if (this.closed) return
    this.sendError(frameId, err)
    this.#flush()
    this.#cleanup()
    this.socket.end()
    setTimeout(() => this.socket.destroy(), 1000).unref()
  }

  async goAway(graceMs: number): Promise<void> {
    if (this.closed) return
    this.send({
      type: FrameType.GOAWAY,
      requestId: 0,
      payload: textEncoder.encode(JSON.stringify({ reason: SHUTDOWN_MESSAGE })),
    })
    for (const entry of this.inFlight.values()) if (entry.streaming) entry.abort(this.ctx.shutdownError)
    if (this.inFlight.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs)
        this.#drained = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    this.#flush()
    this.#cleanup()
    this.socket.end()
    setTimeout(() => this.socket.destroy(), 1000).unref()
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

  // ---- writing: one socket write per event-loop turn ----
  send(frame: Frame): void {
    if (this.socket.destroyed) return
    this.#enqueue(encodeTcpFrame(frame))
  }

  #enqueue(bytes: Uint8Array): void {
    this.#queue.push(bytes)
    this.#queuedBytes += bytes.length
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#flush())
    }
  }

  #flush(): void {
    this.#flushScheduled = false
    if (this.#queue.length === 0 || this.socket.destroyed) {
      this.#queue = []
      this.#queuedBytes = 0
      return
    }
    const data =
      this.#queue.length === 1
        ? (this.#queue[0] as Uint8Array)
        : Buffer.concat(this.#queue, this.#queuedBytes)
    this.#queue = []
    this.#queuedBytes = 0
    this.socket.write(data)
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

  /** Resolves when the socket can take more (or the call is aborted). */
  async #backpressure(signal: AbortSignal): Promise<void> {
    if (this.#queuedBytes + this.socket.writableLength <= this.ctx.options.highWaterMark) return
    this.#flush()
    if (!this.socket.writableNeedDrain || signal.aborted) return
    await new Promise<void>((resolve) => {
      const done = () => {
        this.socket.off('drain', done)
        this.socket.off('close', done)
        signal.removeEventListener('abort', done)
        resolve()
      }
      this.socket.on('drain', done)
      this.socket.on('close', done)
      signal.addEventListener('abort', done)
    })
  }

  // ---- reading ----
  #onData(chunk: Buffer): void {
    try {
      this.lastActivity = Date.now()
      if (this.closed) return
      const wasPartial = this.#reader.bufferedBytes > 0
      let frames: Frame[]
      try {
        frames = this.#reader.push(chunk)
      } catch (err) {
        if (!(err instanceof FrameError)) throw err
        const typed =
          err.code === 'TRV_FRAME_TOO_LARGE'
            ? new PayloadTooLargeException(err.message)
            : new ValidationException(err.message)
        this.fail(err.requestId ?? 0, typed)
        return
      }
      if (this.#reader.bufferedBytes === 0) this.partialSince = 0
      else if (!wasPartial || frames.length > 0) this.partialSince = this.lastActivity
      for (const frame of frames) {
        if (this.closed) return
        this.#onFrame(frame)
      }
    } catch (err) {
      this.log.error({ err }, 'tcp data handler failed')
      this.fail(0, err)
    }
  }

  #onFrame(frame: Frame): void {
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
        if (!this.ctx.hub.subscribe(this, frame.topic as string)) {
          this.sendError(
            frame.requestId,
            new ValidationException('Too many subscriptions on this connection'),
          )
        } else this.send({ type: FrameType.RESPONSE, requestId: frame.requestId, payload: EMPTY })
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
  }

  #onRequest(frame: Frame): void {
    const id = frame.requestId
    const refusal = refuseRequest(id, this.inFlight, this.ctx.options.maxInFlight, this.ctx.isShuttingDown())
    if (refusal) {
      this.sendError(id, refusal)
      return
    }
    let metadata: Record<string, string>
    let rest: Uint8Array
    try {
      ;({ metadata, rest } = decodeMetadata(frame.payload))
    } catch (err) {
      this.sendError(id, new ValidationException((err as Error).message))
      return
    }
    const format = this.#format(metadata.format)
    if (!format) {
      this.sendError(id, new UnsupportedMediaTypeException(`Unsupported format: ${metadata.format}`))
      return
    }
    const definition = this.ctx.trivium.registry.get(frame.endpoint as string)
    const entry = new Cancellation(definition?.streaming === true)
    this.inFlight.set(id, entry)
    void this.#run(frame.endpoint as string, definition, id, metadata, rest, format, entry)
  }

  #format(name: string | undefined): WireFormat | undefined {
    const formats = this.ctx.trivium.formats
    if (name === undefined) return formats.get('binary') ?? jsonFormat
    return formats.get(name)
  }

  async #run(
    endpoint: string,
    definition: EndpointDefinition | undefined,
    id: number,
    metadata: Record<string, string>,
    payload: Uint8Array,
    format: WireFormat,
    entry: Cancellation,
  ): Promise<void> {
    const requestId = `${this.id}:${id}`
    try {
      const bridge = this.ctx.bridge
      if (bridge && definition && !definition.streaming) {
        const out = await bridge.call(
          definition,
          format,
          this.#responseFormat(definition, format),
          payload,
          { protocol: 'tcp', metadata, clientIp: this.clientIp, connection: this.state },
          entry,
        )
        if (out.call) this.#learnIdentity(out.call)
        if (entry.aborted || this.socket.destroyed) return
        if (out.ok) this.#enqueue(frameBytes(FrameType.RESPONSE, id, out.body))
        else this.#enqueue(frameBytes(FrameType.ERROR, id, withRequestId(out.body, requestId)))
        return
      }
      const {
        definition: def,
        call,
        result,
      } = await this.ctx.trivium.invoke({
        endpoint,
        protocol: 'tcp',
        payload,
        format,
        requestId,
        log: this.log,
        metadata,
        clientIp: this.clientIp,
        // core's TriviumCall takes a signal or a function that makes it on first use (CallInit.signal);
        // InvokeInit only types the former. The function spares an AbortController per call.
        signal: entry.lazySignal as unknown as AbortSignal,
        connection: this.state,
      })
      this.#learnIdentity(call)
      const responseFormat = this.#responseFormat(def, format)
      if (def.streaming)
        await this.#pump(id, def, responseFormat, result as AsyncIterable<unknown>, entry.signal)
      else if (!entry.aborted && !this.socket.destroyed) {
        this.#enqueue(frameBytes(FrameType.RESPONSE, id, responseFormat.encode(def.response, result)))
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

  #responseFormat(definition: EndpointDefinition, format: WireFormat): WireFormat {
    return format !== jsonFormat && !definition.response.encode ? jsonFormat : format
  }

  #learnIdentity(call: TriviumCall): void {
    const userId = call.context.user_id
    if (userId === undefined || userId === null || this.closed) return
    const claims = call.context.token_claims as { jti?: unknown; exp?: unknown } | undefined
    const expiresAt = claimsExpiry(claims)
    if (expiresAt !== undefined && (this.expiresAt === undefined || expiresAt < this.expiresAt)) {
      this.expiresAt = expiresAt
      this.#armExpiry()
    }
    const jti = typeof claims?.jti === 'string' ? claims.jti : undefined
    if (this.userId === String(userId) && this.tokenId === jti) return
    this.ctx.hub.identify(this, userId as string | number, jti)
  }

  /**
   * The session ends when the earliest token expiry seen on it passes: ERROR id 0
   * TokenExpiredException `Token has expired`, then close (like a WebSocket's close 4001 at `exp`).
   */
  #armExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer)
    const delay = Math.max(0, (this.expiresAt as number) - Date.now())
    this.#expiryTimer = setTimeout(
      () => {
        this.#expiryTimer = undefined
        if (this.closed) return
        if (Date.now() < (this.expiresAt as number)) this.#armExpiry()
        else this.fail(0, new TokenExpiredException(TOKEN_EXPIRED_MESSAGE))
      },
      Math.min(delay, MAX_TIMER_MS),
    )
    this.#expiryTimer.unref()
  }

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
        next.catch(noop)
        const step = await Promise.race([next, aborted])
        if (step === ABORTED) break
        if (step.done) {
          this.send({ type: FrameType.STREAM_END, requestId: id, payload: EMPTY })
          break
        }
        this.send({
          type: FrameType.STREAM_ITEM,
          requestId: id,
          payload: encodePayload(definition, format, step.value),
        })
        await this.#backpressure(signal)
        if (signal.aborted || this.socket.destroyed) break
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      iterator.return?.()?.catch?.(noop)
    }
    if (signal.aborted && signal.reason === this.ctx.shutdownError) throw signal.reason
  }
}

/** Rewrites the error body's requestId (the injected request's id) to `<connection>:<frame id>`. */
function withRequestId(body: Uint8Array, requestId: string): Uint8Array {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body))
    if (parsed && typeof parsed === 'object') {
      parsed.requestId = requestId
      return textEncoder.encode(JSON.stringify(parsed))
    }
  } catch {
    /* not JSON: pass through */
  }
  return body
}
