// What the WebSocket and TCP clients share: one multiplexed connection of frames (PROTOCOL.md "Frames"),
// request ids, calls/streams/subscriptions in flight, reconnection with backoff + jitter, GOAWAY,
// PING/PONG heartbeats, and the rule that nothing in flight ever hangs when the connection goes away.
import { type Frame, FrameError, FrameType, MAX_JSON_DEPTH, nestsDeeperThan, readCredit } from '@trivium/wire'
import { BaseClient, checkNonNegative, optionError, timeoutToSend, usageError } from './base.js'
import {
  type ErrorBody,
  fromErrorBody,
  NetworkException,
  TimeoutException,
  TriviumError,
  toClientError,
  ValidationException,
} from './errors.js'
import type {
  BidiStreamCall,
  ClientModel,
  ClientStreamCall,
  CommonClientOptions,
  EndpointSpec,
  PayloadFormat,
  ReconnectOptions,
} from './types.js'

const EMPTY = new Uint8Array(0)
const utf8 = new TextEncoder()
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** One open physical connection, as a transport provides it. */
export interface FrameLink {
  send(frame: Frame): void
  /** Closes the connection; resolves once it is closed (forcibly after a short grace). */
  close(reason: string): Promise<void>
}

export interface LinkHandlers {
  frame(frame: Frame): void
  /** Called once when the connection is gone, whoever closed it. */
  closed(reason: string): void
  /** Bad data from the server (a frame that does not decode); the link closes itself after it. */
  protocolError(error: Error): void
}

export type FrameClientOptions = CommonClientOptions & ReconnectOptions

type StreamSignal =
  | { kind: 'item'; value: unknown }
  | { kind: 'end' }
  | { kind: 'error'; error: unknown }
  | { kind: 'lost' }

/** The receiving side of one stream: a queue the frame handler fills and the iterator drains. */
class StreamQueue {
  private readonly queue: StreamSignal[] = []
  private wake: (() => void) | undefined
  put(signal: StreamSignal): void {
    this.queue.push(signal)
    const w = this.wake
    this.wake = undefined
    w?.()
  }
  async take(): Promise<StreamSignal> {
    while (this.queue.length === 0) {
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
    return this.queue.shift() as StreamSignal
  }
}

type Pending =
  | {
      kind: 'call'
      spec: EndpointSpec
      format: PayloadFormat
      resolve: (value: unknown) => void
      reject: (error: unknown) => void
    }
  | { kind: 'control'; resolve: (value: unknown) => void; reject: (error: unknown) => void }
  | { kind: 'stream'; spec: EndpointSpec; format: PayloadFormat; queue: StreamQueue }
  | { kind: 'requests'; spec: EndpointSpec; format: PayloadFormat; call: RequestStreamCall }

interface Conn {
  link: FrameLink
  pending: Map<number, Pending>
  draining: boolean
  closed: boolean
  heartbeat: ReturnType<typeof setInterval> | undefined
  awaitingPong: number | undefined
}

export abstract class FrameClient extends BaseClient {
  protected readonly reconnectAttempts: number
  protected readonly reconnectDelayMs: number
  protected readonly reconnectMaxDelayMs: number
  protected readonly reconnectJitter: number
  protected readonly pingIntervalMs: number
  private conn: Conn | undefined
  private readonly oldConns = new Set<Conn>()
  private connecting: Promise<Conn> | undefined
  private everConnected = false
  private userClosed = false
  private nextRequestId = 0
  private readonly topics = new Map<string, Set<(message: unknown) => void>>()
  private readonly sleepers = new Set<() => void>()

  constructor(options: FrameClientOptions) {
    super(options)
    this.reconnectAttempts = checkNonNegative('reconnectAttempts', options.reconnectAttempts, 10)
    this.reconnectDelayMs = checkNonNegative('reconnectDelayMs', options.reconnectDelayMs, 500)
    this.reconnectMaxDelayMs = checkNonNegative('reconnectMaxDelayMs', options.reconnectMaxDelayMs, 30_000)
    const jitter = options.reconnectJitter ?? 0.2
    if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
      throw optionError('reconnectJitter must be a number from 0 to 1')
    }
    this.reconnectJitter = jitter
    this.pingIntervalMs = checkNonNegative('pingIntervalMs', options.pingIntervalMs, 30_000)
  }

  /** Human-readable target for messages (`ws://host:port/ws`, `host:port`). */
  protected abstract readonly target: string
  /** Opens one connection; rejects with NetworkException when it cannot. */
  protected abstract openLink(handlers: LinkHandlers): Promise<FrameLink>
  /** The payload format of a call on `spec`. */
  protected abstract formatFor(spec: EndpointSpec): PayloadFormat
  /** The REQUEST payload: metadata (with `idempotency_key` when given) + model bytes. */
  protected abstract requestPayload(
    spec: EndpointSpec,
    request: unknown,
    format: PayloadFormat,
    idempotencyKey?: string,
    /** Sent as `timeout_ms` (PROTOCOL.md "Deadlines"). */
    timeout?: string,
  ): Promise<Uint8Array>

  // ---- connection lifecycle ----

  async connect(): Promise<void> {
    await this.ensureConnection(undefined)
  }

  private ensureConnection(signal: AbortSignal | undefined): Promise<Conn> {
    if (this.userClosed) return Promise.reject(new NetworkException('Client closed'))
    const conn = this.conn
    if (conn && !conn.closed && !conn.draining) return Promise.resolve(conn)
    if (!this.connecting) this.startConnecting(1, false)
    const connecting = this.connecting as Promise<Conn>
    if (!signal) return connecting
    return new Promise<Conn>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason)
        return
      }
      const onAbort = () => reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      connecting.then(
        (c) => {
          signal.removeEventListener('abort', onAbort)
          resolve(c)
        },
        (err) => {
          signal.removeEventListener('abort', onAbort)
          reject(err)
        },
      )
    })
  }

  /** Starts a connect loop of up to `attempts` tries (the first one immediate unless `delayFirst`). */
  private startConnecting(attempts: number, delayFirst: boolean): Promise<Conn> {
    this.setState(this.everConnected ? 'reconnecting' : 'connecting')
    const p = this.connectLoop(attempts, delayFirst)
    this.connecting = p
    p.then(
      () => {
        if (this.connecting === p) this.connecting = undefined
      },
      () => {
        if (this.connecting === p) this.connecting = undefined
      },
    )
    return p
  }

  private async connectLoop(attempts: number, delayFirst: boolean): Promise<Conn> {
    let lastError: unknown
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0 || delayFirst) await this.sleep(this.backoff(attempt))
      if (this.userClosed) throw new NetworkException('Client closed')
      try {
        const conn = await this.openConn()
        if (this.userClosed) {
          await conn.link.close('client closed')
          throw new NetworkException('Client closed')
        }
        const reconnected = this.everConnected
        this.everConnected = true
        this.conn = conn
        this.setState('connected')
        this.emit('connected', { reconnected })
        if (this.topics.size > 0) void this.resubscribe(conn)
        return conn
      } catch (err) {
        if (this.userClosed) throw new NetworkException('Client closed')
        lastError = err
        this.emit('error', err instanceof TriviumError ? err : new NetworkException(String(err)))
      }
    }
    this.setState('idle')
    const detail = lastError instanceof Error ? lastError.message : String(lastError)
    throw new NetworkException(
      attempts > 1 ? `Could not reconnect to ${this.target} after ${attempts} attempts: ${detail}` : detail,
      { cause: lastError },
    )
  }

  /** Delay before attempt `n` (1-based for retries): exponential, capped, ± jitter. */
  private backoff(attempt: number): number {
    const base = Math.min(this.reconnectMaxDelayMs, this.reconnectDelayMs * 2 ** Math.max(0, attempt - 1))
    const spread = base * this.reconnectJitter
    return Math.max(0, Math.round(base - spread + Math.random() * 2 * spread))
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  private async openConn(): Promise<Conn> {
    let conn: Conn | undefined
    const early: Array<() => void> = []
    const link = await this.openLink({
      frame: (frame) => {
        if (conn) this.onFrame(conn, frame)
      },
      closed: (reason) => {
        if (conn) this.onClosed(conn, reason)
        else early.push(() => conn && this.onClosed(conn, reason))
      },
      protocolError: (error) => {
        this.emit(
          'error',
          new NetworkException(`Bad data from the server: ${error.message}`, { cause: error }),
        )
      },
    })
    conn = {
      link,
      pending: new Map(),
      draining: false,
      closed: false,
      heartbeat: undefined,
      awaitingPong: undefined,
    }
    for (const fn of early) fn()
    if (!conn.closed && this.pingIntervalMs > 0) this.startHeartbeat(conn)
    return conn
  }

  private startHeartbeat(conn: Conn): void {
    const c = conn
    c.heartbeat = setInterval(() => {
      if (c.closed) return
      if (c.awaitingPong !== undefined) {
        void c.link.close('no PONG within the ping interval')
        this.onClosed(c, 'no PONG within the ping interval')
        return
      }
      c.awaitingPong = this.allocateId(c)
      this.sendFrame(c, { type: FrameType.PING, requestId: c.awaitingPong, payload: EMPTY })
    }, this.pingIntervalMs)
    // Node: a heartbeat alone must not keep the process alive.
    ;(c.heartbeat as { unref?: () => void }).unref?.()
  }

  private onClosed(conn: Conn, reason: string): void {
    if (conn.closed) return
    conn.closed = true
    if (conn.heartbeat) clearInterval(conn.heartbeat)
    this.oldConns.delete(conn)
    const message = this.userClosed ? 'Client closed' : `Connection lost: ${reason}`
    this.failPending(conn, message)
    if (conn !== this.conn) return // a drained (GOAWAY) connection: its replacement is already there
    this.conn = undefined
    if (this.userClosed) return
    const willReconnect = this.reconnectAttempts > 0
    this.emit('disconnected', { reason, willReconnect })
    if (!willReconnect) {
      this.setState('idle')
      return
    }
    if (!this.connecting) {
      this.startConnecting(this.reconnectAttempts, true).catch((err) =>
        this.emit('error', toClientError(err) as TriviumError),
      )
    }
  }

  private failPending(conn: Conn, message: string): void {
    const pending = [...conn.pending.values()]
    conn.pending.clear()
    for (const entry of pending) {
      if (entry.kind === 'requests') entry.call.finish(new NetworkException(message))
      else if (entry.kind === 'stream')
        entry.queue.put(
          this.userClosed ? { kind: 'error', error: new NetworkException(message) } : { kind: 'lost' },
        )
      else entry.reject(new NetworkException(message))
    }
  }

  /** Stops using `conn` for new calls (GOAWAY, or a refreshed token) and opens a replacement. */
  private drain(conn: Conn, delayFirst: boolean): void {
    if (conn.draining || conn.closed) return
    conn.draining = true
    this.oldConns.add(conn)
    if (this.conn === conn) this.conn = undefined
    if (conn.pending.size === 0) void conn.link.close('drained')
    if (!this.connecting && !this.userClosed) {
      this.startConnecting(Math.max(1, this.reconnectAttempts), delayFirst).catch((err) =>
        this.emit('error', toClientError(err) as TriviumError),
      )
    }
  }

  /** Moves new calls to a fresh connection (WebSocket: after a token refresh, the token is per connection). */
  protected drainCurrent(): void {
    if (this.conn) this.drain(this.conn, false)
  }

  async close(): Promise<void> {
    if (this.userClosed) return
    this.userClosed = true
    for (const wake of [...this.sleepers]) wake()
    const conns = [...this.oldConns]
    if (this.conn) conns.push(this.conn)
    this.conn = undefined
    this.setState('closed')
    await Promise.all(
      conns.map(async (c) => {
        this.failPending(c, 'Client closed')
        if (c.heartbeat) clearInterval(c.heartbeat)
        await c.link.close('client closed')
        this.onClosed(c, 'client closed')
      }),
    )
    await this.connecting?.catch(() => {})
  }

  // ---- sending ----

  private allocateId(conn: Conn): number {
    for (;;) {
      this.nextRequestId = this.nextRequestId >= 0xffffffff ? 1 : this.nextRequestId + 1
      if (!conn.pending.has(this.nextRequestId) && conn.awaitingPong !== this.nextRequestId)
        return this.nextRequestId
    }
  }

  private sendFrame(conn: Conn, frame: Frame): void {
    try {
      conn.link.send(frame)
    } catch (err) {
      if (err instanceof FrameError) throw new ValidationException(err.message)
      throw new NetworkException(`Connection lost: ${(err as Error).message}`, { cause: err })
    }
  }

  private cancel(conn: Conn, id: number): void {
    if (conn.closed) return
    try {
      conn.link.send({ type: FrameType.CANCEL, requestId: id, payload: EMPTY })
    } catch {
      // the connection is going away: nothing to cancel
    }
    if (conn.draining && conn.pending.size === 0) void conn.link.close('drained')
  }

  protected async encodeModel(
    model: ClientModel,
    value: unknown,
    format: PayloadFormat,
    name: string,
  ): Promise<Uint8Array> {
    if (value === undefined) return EMPTY
    if (format === 'binary') {
      if (typeof model.encode !== 'function') {
        throw new ValidationException(`Endpoint ${name} has no binary request form: use format 'json'`)
      }
      return model.encode(value)
    }
    return utf8.encode(model.stringify ? model.stringify(value) : JSON.stringify(model.toJSON(value)))
  }

  protected async doCall(
    spec: EndpointSpec,
    request: unknown,
    signal: AbortSignal,
    idempotencyKey: string | undefined,
    deadlineAt: number | undefined,
  ): Promise<unknown> {
    const conn = await this.ensureConnection(signal)
    const format = this.formatFor(spec)
    // Measured after the connection is up: the time left is what the server gets.
    const payload = await this.requestPayload(
      spec,
      request,
      format,
      idempotencyKey,
      timeoutToSend(deadlineAt),
    )
    if (signal.aborted) throw signal.reason
    if (conn.closed) throw new NetworkException('Connection lost: closed before the request was sent')
    const id = this.allocateId(conn)
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        if (conn.pending.get(id) === entry) {
          conn.pending.delete(id)
          this.cancel(conn, id)
        }
        reject(signal.reason)
      }
      const entry: Pending = {
        kind: 'call',
        spec,
        format,
        resolve: (value) => {
          signal.removeEventListener('abort', onAbort)
          resolve(value)
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort)
          reject(error)
        },
      }
      conn.pending.set(id, entry)
      signal.addEventListener('abort', onAbort, { once: true })
      try {
        this.sendFrame(conn, { type: FrameType.REQUEST, requestId: id, endpoint: spec.name, payload })
      } catch (err) {
        conn.pending.delete(id)
        entry.reject(err)
      }
    })
  }

  protected async *doStream(
    spec: EndpointSpec,
    request: unknown,
    signal?: AbortSignal,
    deadlineAt?: number,
  ): AsyncGenerator<unknown> {
    let current = request
    let lastItem: unknown
    let seen = false
    const aborted = () => signal?.reason ?? new Error('aborted')
    for (;;) {
      if (signal?.aborted) throw aborted()
      const conn = await this.ensureConnection(signal)
      const format = this.formatFor(spec)
      const payload = await this.requestPayload(spec, current, format, undefined, timeoutToSend(deadlineAt))
      const queue = new StreamQueue()
      const id = this.allocateId(conn)
      const entry: Pending = { kind: 'stream', spec, format, queue }
      conn.pending.set(id, entry)
      const onAbort = () => queue.put({ kind: 'error', error: aborted() })
      signal?.addEventListener('abort', onAbort, { once: true })
      let lost = false
      try {
        this.sendFrame(conn, { type: FrameType.REQUEST, requestId: id, endpoint: spec.name, payload })
        for (;;) {
          const next = await queue.take()
          if (next.kind === 'item') {
            lastItem = next.value
            seen = true
            yield next.value
          } else if (next.kind === 'end') {
            return
          } else if (next.kind === 'error') {
            throw next.error
          } else {
            lost = true
            break
          }
        }
      } finally {
        signal?.removeEventListener('abort', onAbort)
        // Still registered: the consumer stopped early (break, throw, abort). Tell the server.
        if (conn.pending.get(id) === entry) {
          conn.pending.delete(id)
          this.cancel(conn, id)
        }
      }
      if (lost) {
        if (!spec.resume || this.userClosed) {
          throw new NetworkException(`Stream ${spec.name} interrupted: connection lost`)
        }
        if (seen) current = spec.resume(request, lastItem)
      }
    }
  }

  protected openRequestStream(
    spec: EndpointSpec,
    bidi: boolean,
    signal: AbortSignal | undefined,
  ): ClientStreamCall<unknown, unknown> | BidiStreamCall<unknown, unknown> {
    const call = new RequestStreamCall(spec, bidi)
    let conn: Conn | undefined
    let id = 0
    let format: PayloadFormat = this.formatFor(spec)
    const entry = (): Pending | undefined => conn?.pending.get(id)
    call.transport = {
      open: async () => {
        if (signal?.aborted) throw signal.reason
        const c = await this.ensureConnection(signal)
        format = this.formatFor(spec)
        // A REQUEST opening a stream of requests carries the metadata and no model.
        const payload = await this.requestPayload(spec, undefined, format)
        if (c.closed) throw new NetworkException('Connection lost: closed before the request was sent')
        if (call.settled) return
        conn = c
        id = this.allocateId(c)
        c.pending.set(id, { kind: 'requests', spec, format, call })
        this.sendFrame(c, { type: FrameType.REQUEST, requestId: id, endpoint: spec.name, payload })
      },
      encode: (value) => this.encodeModel(spec.request, value, format, spec.name),
      item: (bytes) => {
        if (conn && entry()?.kind === 'requests')
          this.sendFrame(conn, { type: FrameType.CLIENT_ITEM, requestId: id, payload: bytes })
      },
      end: () => {
        if (conn && entry()?.kind === 'requests')
          this.sendFrame(conn, { type: FrameType.CLIENT_END, requestId: id, payload: EMPTY })
      },
      cancel: () => {
        const c = conn
        if (c && entry()?.kind === 'requests') {
          c.pending.delete(id)
          this.cancel(c, id)
        }
      },
    }
    if (signal) {
      const onAbort = () => call.cancel(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      call.onSettled = () => signal.removeEventListener('abort', onAbort)
    }
    call.start()
    return call
  }

  private control(conn: Conn, type: number, topic: string): Promise<unknown> {
    const id = this.allocateId(conn)
    return new Promise((resolve, reject) => {
      const timeout = this.timeoutMs
      const timer =
        timeout > 0
          ? setTimeout(() => {
              conn.pending.delete(id)
              reject(new TimeoutException(`Subscription to ${topic} timed out after ${timeout} ms`))
            }, timeout)
          : undefined
      const done = () => {
        if (timer) clearTimeout(timer)
      }
      conn.pending.set(id, {
        kind: 'control',
        resolve: (v) => {
          done()
          resolve(v)
        },
        reject: (e) => {
          done()
          reject(e)
        },
      })
      try {
        this.sendFrame(conn, { type, requestId: id, topic, payload: EMPTY })
      } catch (err) {
        conn.pending.delete(id)
        done()
        reject(err)
      }
    })
  }

  async onPush(topic: string, handler: (message: unknown) => void): Promise<() => Promise<void>> {
    if (typeof topic !== 'string' || topic.length === 0) throw optionError('topic must be a non-empty string')
    if (typeof handler !== 'function') throw optionError('handler must be a function')
    let set = this.topics.get(topic)
    const first = !set
    if (!set) {
      set = new Set()
      this.topics.set(topic, set)
    }
    const handlers = set
    handlers.add(handler)
    if (first) {
      try {
        const conn = await this.ensureConnection(undefined)
        await this.control(conn, FrameType.SUBSCRIBE, topic)
      } catch (err) {
        handlers.delete(handler)
        if (handlers.size === 0 && this.topics.get(topic) === handlers) this.topics.delete(topic)
        throw toClientError(err)
      }
    }
    return async () => {
      handlers.delete(handler)
      if (handlers.size > 0 || this.topics.get(topic) !== handlers) return
      this.topics.delete(topic)
      const conn = this.conn
      if (!conn || conn.closed || conn.draining) return
      await this.control(conn, FrameType.UNSUBSCRIBE, topic).catch(() => {})
    }
  }

  private async resubscribe(conn: Conn): Promise<void> {
    for (const topic of this.topics.keys()) {
      try {
        await this.control(conn, FrameType.SUBSCRIBE, topic)
      } catch (err) {
        this.emit('error', toClientError(err) as TriviumError)
      }
    }
  }

  // ---- receiving ----

  private onFrame(conn: Conn, frame: Frame): void {
    const id = frame.requestId
    switch (frame.type) {
      case FrameType.CREDIT:
      case FrameType.STOP_SENDING: {
        const entry = conn.pending.get(id)
        if (entry?.kind !== 'requests') return
        if (frame.type === FrameType.CREDIT) entry.call.credit(readCredit(frame.payload))
        else entry.call.stop()
        break
      }
      case FrameType.RESPONSE: {
        const entry = conn.pending.get(id)
        if (entry?.kind === 'requests') {
          conn.pending.delete(id)
          if (entry.call.bidi) return
          try {
            entry.call.finish(undefined, decodePayload(entry.spec, entry.format, frame.payload))
          } catch (err) {
            entry.call.finish(err)
          }
          break
        }
        if (!entry || entry.kind === 'stream') return
        conn.pending.delete(id)
        if (entry.kind === 'control') entry.resolve(undefined)
        else {
          try {
            entry.resolve(decodePayload(entry.spec, entry.format, frame.payload))
          } catch (err) {
            entry.reject(err)
          }
        }
        break
      }
      case FrameType.ERROR: {
        const error = errorFromPayload(frame.payload)
        const entry = conn.pending.get(id)
        if (!entry) {
          this.emit('error', error)
          return
        }
        conn.pending.delete(id)
        if (entry.kind === 'requests') entry.call.finish(error)
        else if (entry.kind !== 'stream') entry.reject(error)
        else if (conn.draining && error.code === 'TRV_SERVICE_UNAVAILABLE' && entry.spec.resume) {
          entry.queue.put({ kind: 'lost' }) // the server is going away: resume on the new connection
        } else entry.queue.put({ kind: 'error', error })
        break
      }
      case FrameType.STREAM_ITEM: {
        const entry = conn.pending.get(id)
        if (entry?.kind === 'requests') {
          try {
            entry.call.item(decodePayload(entry.spec, entry.format, frame.payload))
          } catch (err) {
            conn.pending.delete(id)
            this.cancel(conn, id)
            entry.call.finish(err)
          }
          break
        }
        if (entry?.kind !== 'stream') return
        try {
          entry.queue.put({ kind: 'item', value: decodePayload(entry.spec, entry.format, frame.payload) })
        } catch (err) {
          conn.pending.delete(id)
          this.cancel(conn, id)
          entry.queue.put({ kind: 'error', error: err })
        }
        break
      }
      case FrameType.STREAM_END: {
        const entry = conn.pending.get(id)
        if (entry?.kind === 'requests') {
          conn.pending.delete(id)
          entry.call.finish()
          break
        }
        if (entry?.kind !== 'stream') return
        conn.pending.delete(id)
        entry.queue.put({ kind: 'end' })
        break
      }
      case FrameType.PUSH: {
        const handlers = this.topics.get(frame.topic as string)
        if (!handlers) return
        let message: unknown
        try {
          const text = strictUtf8.decode(frame.payload)
          message = text.length === 0 ? undefined : JSON.parse(text)
        } catch (err) {
          this.emit('error', new NetworkException(`Bad push message on ${frame.topic}`, { cause: err }))
          return
        }
        for (const handler of [...handlers]) {
          try {
            handler(message)
          } catch (err) {
            this.emit('error', toClientError(err) as TriviumError)
          }
        }
        break
      }
      case FrameType.PING:
        try {
          conn.link.send({ type: FrameType.PONG, requestId: id, payload: EMPTY })
        } catch {
          // closing
        }
        break
      case FrameType.PONG:
        if (conn.awaitingPong === id) conn.awaitingPong = undefined
        break
      case FrameType.GOAWAY:
        // The server is going away: new calls wait for a new connection, opened after the reconnect
        // delay (an immediate attempt would reach the same server while it shuts down).
        this.drain(conn, true)
        break
      default:
        this.emit(
          'error',
          new NetworkException(`Unexpected frame type 0x${frame.type.toString(16)} from the server`),
        )
    }
    if (conn.draining && conn.pending.size === 0 && !conn.closed) void conn.link.close('drained')
  }
}

function decodePayload(spec: EndpointSpec, format: PayloadFormat, bytes: Uint8Array): unknown {
  const model = spec.response
  try {
    // The server answers in JSON when the response model has no binary form (PROTOCOL.md "HTTP").
    if (format === 'binary' && typeof model.decode === 'function' && typeof model.encode === 'function') {
      return model.decode(bytes)
    }
    const text = strictUtf8.decode(bytes)
    const json = text.length === 0 ? undefined : JSON.parse(text)
    // The model's reader recurses with the data (a recursive model): bounded as the server bounds requests.
    if (nestsDeeperThan(json)) throw new Error(`nested deeper than ${MAX_JSON_DEPTH} levels`)
    return model.fromJSON(json)
  } catch (err) {
    throw new NetworkException(`Bad response from ${spec.name}: ${(err as Error).message}`, { cause: err })
  }
}

function errorFromPayload(bytes: Uint8Array): TriviumError {
  try {
    const body = JSON.parse(strictUtf8.decode(bytes)) as Partial<ErrorBody>
    if (body && typeof body === 'object' && typeof body.code === 'string') return fromErrorBody(body)
  } catch {
    // fall through
  }
  return new NetworkException('Bad error frame from the server')
}

/** What a RequestStreamCall asks of its connection. */
export interface RequestStreamTransport {
  /** Connects and sends the REQUEST; rejects when it cannot. */
  open(): Promise<void>
  encode(value: unknown): Promise<Uint8Array>
  item(bytes: Uint8Array): void
  end(): void
  cancel(): void
}

/**
 * A client or bidirectional stream on the client (PROTOCOL.md "Client and bidirectional streams"): sends
 * wait for credit, in order; the server's answer (RESPONSE, items, STREAM_END, ERROR) or a lost connection
 * settles it.
 */
export class RequestStreamCall
  implements ClientStreamCall<unknown, unknown>, BidiStreamCall<unknown, unknown>
{
  transport!: RequestStreamTransport
  onSettled: (() => void) | undefined
  readonly response: Promise<unknown>
  settled = false
  #resolve!: (value: unknown) => void
  #reject!: (error: unknown) => void
  #error: { error: unknown } | undefined
  #credit = 0
  #stopped = false
  #ended = false
  #wake: (() => void) | undefined
  /** Sends run one after another, so items keep their order and credit is counted exactly. */
  #chain: Promise<unknown> = Promise.resolve()
  #opened: Promise<void> | undefined
  readonly #items = new StreamQueue()

  constructor(
    readonly spec: EndpointSpec,
    readonly bidi: boolean,
  ) {
    this.response = new Promise((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    // A caller that only iterates (bidi) or only sends must not see an unhandled rejection.
    this.response.catch(noop)
  }

  start(): void {
    this.#opened = this.transport.open().catch((err) => this.finish(toClientError(err)))
  }

  send(item: unknown): Promise<boolean> {
    if (this.#ended) {
      return Promise.reject(usageError(`send() after end() on the stream to ${this.spec.name}`))
    }
    return this.#enqueue(async () => {
      await this.#opened
      const bytes = await this.transport.encode(item)
      for (;;) {
        if (this.#error) throw this.#error.error
        if (this.#stopped || this.settled) return false
        // Credit is in bytes: an item may go out while any is left (PROTOCOL.md), costing its size.
        if (this.#credit > 0) break
        await new Promise<void>((resolve) => {
          this.#wake = resolve
        })
      }
      this.#credit -= Math.max(1, bytes.length)
      this.transport.item(bytes)
      return true
    })
  }

  async sendAll(items: Iterable<unknown> | AsyncIterable<unknown>): Promise<boolean> {
    for await (const item of items) {
      if (!(await this.send(item))) return false
    }
    await this.end()
    return true
  }

  end(): Promise<void> {
    if (this.#ended) return this.#chain.then(noop, noop)
    this.#ended = true
    return this.#enqueue(async () => {
      await this.#opened
      if (!this.settled && !this.#stopped) this.transport.end()
    }).then(noop, noop)
  }

  cancel(reason?: unknown): void {
    if (this.settled) return
    this.transport.cancel()
    this.finish(reason ?? new Error('cancelled'))
  }

  // ---- from the connection ----

  credit(count: number): void {
    this.#credit += count
    this.#notify()
  }

  stop(): void {
    this.#stopped = true
    this.#notify()
  }

  item(value: unknown): void {
    this.#items.put({ kind: 'item', value })
  }

  /** The call is over: an error, else a client stream's response (or a bidi stream's STREAM_END). */
  finish(error?: unknown, value?: unknown): void {
    if (this.settled) return
    this.settled = true
    this.onSettled?.()
    if (error !== undefined) {
      this.#error = { error }
      this.#reject(error)
      this.#items.put({ kind: 'error', error })
    } else {
      this.#resolve(value)
      this.#items.put({ kind: 'end' })
    }
    this.#notify()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<unknown> {
    if (!this.bidi) throw usageError(`Endpoint ${this.spec.name} answers one response: await .response`)
    try {
      for (;;) {
        const next = await this.#items.take()
        if (next.kind === 'item') yield next.value
        else if (next.kind === 'end') return
        else if (next.kind === 'error') throw next.error
        else return
      }
    } finally {
      // The consumer stopped early (break, throw): tell the server.
      this.cancel(new Error('iteration stopped'))
    }
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(step)
    this.#chain = run.catch(noop)
    return run
  }

  #notify(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }
}

function noop(): void {}
