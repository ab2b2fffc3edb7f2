// What the WebSocket and TCP clients share above the connection (frame-connection.ts): calls, server
// streams, client and bidirectional streams, and push subscriptions over one multiplexed connection
// (PROTOCOL.md "Frames").
import { type Frame, FrameType } from '@trivium/wire'
import { optionError, timeoutToSend } from './base.js'
import { type AnswerHooks, answerFrame, type Conn, type Pending } from './call-table.js'
import { RequestStreamCall } from './client-streams.js'
import {
  NetworkException,
  TimeoutException,
  type TriviumError,
  toClientError,
  ValidationException,
} from './errors.js'
import { FrameConnection } from './frame-connection.js'
import { StreamQueue } from './frame-streams.js'
import type { BidiStreamCall, ClientModel, ClientStreamCall, EndpointSpec, PayloadFormat } from './types.js'

export type { FrameClientOptions, FrameLink, LinkHandlers } from './frame-connection.js'

const EMPTY = new Uint8Array(0)
const utf8 = new TextEncoder()
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

export abstract class FrameClient extends FrameConnection {
  /** How the call table answers back: a CANCEL for a stream it stops, an error with no call to take it. */
  readonly #answerHooks: AnswerHooks = {
    cancel: (conn, id) => this.cancel(conn, id),
    unclaimed: (error) => this.emit('error', error),
  }
  private readonly topics = new Map<string, Set<(message: unknown) => void>>()

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

  protected connectionOpened(conn: Conn): void {
    if (this.topics.size > 0) void this.resubscribe(conn)
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

  protected onFrame(conn: Conn, frame: Frame): void {
    const id = frame.requestId
    switch (frame.type) {
      case FrameType.CREDIT:
      case FrameType.STOP_SENDING:
      case FrameType.RESPONSE:
      case FrameType.ERROR:
      case FrameType.STREAM_ITEM:
      case FrameType.STREAM_END:
        if (!answerFrame(conn, frame, this.#answerHooks)) return
        break
      case FrameType.PUSH:
        this.#deliverPush(frame)
        break
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

  /** A PUSH to the handlers of its topic (PROTOCOL.md "Push"). */
  #deliverPush(frame: Frame): void {
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
  }
}
