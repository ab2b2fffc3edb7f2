// The response half of the lean inject path: the `http.ServerResponse` surface Fastify's reply uses
// (`writeHead`, `setHeader`/`getHeader`/`getHeaders`/`hasHeader`/`removeHeader`, `write`, `end`,
// `headersSent`, `statusCode`, `writableEnded`, `destroyed`) and the `finish`/`close` events its
// onResponse hooks and core's `call.signal` listen to. The body is collected and handed to `onEnd`
// once, when the response ends or the call is aborted. `write` + events make it a legacy writable
// stream, so a stream payload piped into it (Fastify's `sendStream`) is collected as well.
import { EventEmitter } from 'node:events'
import type { LeanSocket } from './lean-request.js'

type HeaderValue = string | number | readonly string[]

function headersSentError(): Error {
  const err = new Error('Cannot set headers after they are sent to the client') as Error & {
    code: string
  }
  err.code = 'ERR_HTTP_HEADERS_SENT'
  return err
}

function toBuffer(chunk: unknown, encoding?: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined
  if (typeof chunk === 'string')
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
  if (Buffer.isBuffer(chunk)) return chunk
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  throw new TypeError('The "chunk" argument must be of type string or an instance of Buffer or Uint8Array')
}

function emitFinish(res: LeanResponse): void {
  res.writableFinished = true
  res.emit('finish')
  res.emitClose()
}

// An EventEmitter by prototype, without EventEmitter's constructor (its `init` was the largest single
// cost of the lean path in a CPU profile): the emitter's fields start empty, as `init` leaves them.
export interface LeanResponse extends EventEmitter {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: EventEmitter.prototype is set below the class
export class LeanResponse {
  _events: Record<string | symbol, unknown> | undefined = undefined
  _eventsCount = 0
  _maxListeners: number | undefined = undefined
  statusCode = 200
  statusMessage = ''
  headersSent = false
  writableEnded = false
  writableFinished = false
  destroyed = false
  readonly writable = true
  readonly sendDate = false
  #headers: Record<string, HeaderValue> = {}
  #chunks: Buffer[] = []
  #length = 0
  #closed = false

  constructor(
    readonly socket: LeanSocket,
    /** Called once: the whole body (ended), or `undefined` (destroyed before the end). */
    private readonly onEnd: (res: LeanResponse, body: Buffer | undefined) => void,
  ) {}

  get connection(): LeanSocket {
    return this.socket
  }

  get finished(): boolean {
    return this.writableEnded
  }

  setHeader(name: string, value: HeaderValue): this {
    if (this.headersSent) throw headersSentError()
    this.#headers[name.toLowerCase()] = value
    return this
  }

  appendHeader(name: string, value: HeaderValue): this {
    if (this.headersSent) throw headersSentError()
    const key = name.toLowerCase()
    const prev = this.#headers[key]
    if (prev === undefined) this.#headers[key] = value
    else this.#headers[key] = [prev, value].flat().map(String)
    return this
  }

  getHeader(name: string): HeaderValue | undefined {
    return this.#headers[name.toLowerCase()]
  }

  getHeaders(): Record<string, HeaderValue> {
    return { ...this.#headers }
  }

  getHeaderNames(): string[] {
    return Object.keys(this.#headers)
  }

  hasHeader(name: string): boolean {
    return this.#headers[name.toLowerCase()] !== undefined
  }

  removeHeader(name: string): void {
    if (this.headersSent) throw headersSentError()
    delete this.#headers[name.toLowerCase()]
  }

  writeHead(
    statusCode: number,
    reason?: string | Record<string, HeaderValue> | HeaderValue[],
    headers?: Record<string, HeaderValue> | HeaderValue[],
  ): this {
    if (this.headersSent) throw headersSentError()
    this.statusCode = statusCode
    let fields = headers
    if (typeof reason === 'string') this.statusMessage = reason
    else fields = reason
    if (Array.isArray(fields)) {
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const value = fields[i + 1]
        if (value !== undefined) this.setHeader(String(fields[i]), value)
      }
    } else if (fields !== undefined) {
      for (const name in fields) {
        const value = fields[name]
        if (value !== undefined) this.#headers[name.toLowerCase()] = value
      }
    }
    this.headersSent = true
    return this
  }

  flushHeaders(): void {
    this.headersSent = true
  }

  write(chunk: unknown, encoding?: unknown, callback?: () => void): boolean {
    if (this.writableEnded || this.destroyed) return false
    this.headersSent = true
    const bytes = toBuffer(chunk, encoding)
    if (bytes !== undefined && bytes.length > 0) {
      this.#chunks.push(bytes)
      this.#length += bytes.length
    }
    const cb = typeof encoding === 'function' ? encoding : callback
    if (typeof cb === 'function') queueMicrotask(cb as () => void)
    return true
  }

  end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (this.writableEnded) return this
    if (typeof chunk === 'function') {
      callback = chunk
      chunk = undefined
    } else if (typeof encoding === 'function') {
      callback = encoding
      encoding = undefined
    }
    if (this.destroyed) return this
    const bytes = toBuffer(chunk, encoding)
    this.headersSent = true
    let body: Buffer
    if (this.#chunks.length === 0) body = bytes ?? Buffer.alloc(0)
    else {
      if (bytes !== undefined) {
        this.#chunks.push(bytes)
        this.#length += bytes.length
      }
      const only = this.#chunks.length === 1 ? this.#chunks[0] : undefined
      body = only ?? Buffer.concat(this.#chunks, this.#length)
    }
    this.#chunks = []
    // Before `writableEnded`: the owner can still tell whether Fastify's reply counts as sent already
    // (then it was hijacked: Fastify's own send path ends the response while `reply.sent` is false).
    this.onEnd(this, body)
    this.writableEnded = true
    if (typeof callback === 'function') this.once('finish', callback as () => void)
    // As on a socket: `finish` (onResponse hooks) after the writer's own code has returned.
    process.nextTick(emitFinish, this)
    return this
  }

  /** The call was cancelled, or a hook gave up on the response: `close` without `finish`. */
  destroy(_err?: Error): this {
    if (this.destroyed) return this
    this.destroyed = true
    if (!this.writableEnded) this.onEnd(this, undefined)
    process.nextTick(() => this.emitClose())
    return this
  }

  emitClose(): void {
    if (this.#closed) return
    this.#closed = true
    this.emit('close')
  }

  /** A `close` listener added after the close (core makes `call.signal` lazily) still hears it. */
  once(event: string | symbol, listener: (...args: any[]) => void): this {
    if (event === 'close' && this.#closed) {
      queueMicrotask(listener)
      return this
    }
    return EventEmitter.prototype.once.call(this, event, listener) as this
  }

  // Accepted and ignored: nothing to flush, no socket timeout, no trailers or interim responses on a
  // frame (app.inject() drops them from the payload as well).
  cork(): void {}
  uncork(): void {}
  setTimeout(): this {
    return this
  }
  addTrailers(): void {}
  writeEarlyHints(_hints: unknown, callback?: () => void): void {
    if (typeof callback === 'function') queueMicrotask(callback)
  }
  writeContinue(): void {}
}
Object.setPrototypeOf(LeanResponse.prototype, EventEmitter.prototype)
