// The request half of the lean inject path: what Fastify and well-behaved hooks read from
// `request.raw` (method, url, headers, `socket.remoteAddress`, the body as stream events), and nothing
// else. light-my-request builds a full `Readable` plus header validation per call; this is a plain
// EventEmitter whose body is delivered synchronously when Fastify's content-type parser calls
// `resume()` (the bytes are all there: a frame is complete before it is dispatched).
import { EventEmitter } from 'node:events'
import type { TransportOverride } from '@trivium/core'
import type { FastifyReply } from 'fastify'

const noop = (): void => {}

/** `request.raw.socket`: the address of the TCP connection; timeouts and keep-alive do not apply. */
export class LeanSocket {
  readonly encrypted = false
  readonly destroyed = false
  remotePort: number | undefined = undefined
  /** Fastify keeps its onTimeout bookkeeping here (a frame call never times out on a socket). */
  _meta: unknown = null
  constructor(readonly remoteAddress: string | undefined) {}
  on(): this {
    return this
  }
  once(): this {
    return this
  }
  removeListener(): this {
    return this
  }
  off(): this {
    return this
  }
  setTimeout(): this {
    return this
  }
}

// An EventEmitter by prototype, without EventEmitter's constructor (see LeanResponse).
export interface LeanRequest extends EventEmitter {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: EventEmitter.prototype is set below the class
export class LeanRequest {
  _events: Record<string | symbol, unknown> | undefined = undefined
  _eventsCount = 0
  _maxListeners: number | undefined = undefined
  readonly httpVersion = '1.1'
  readonly httpVersionMajor = 1
  readonly httpVersionMinor = 1
  readonly socket: LeanSocket
  aborted = false
  complete = false
  destroyed = false
  readable = true
  /** The Fastify reply, once the bridge's onRequest hook saw this request. */
  reply: FastifyReply | undefined = undefined
  #body: Buffer | undefined
  #encoding: BufferEncoding | undefined = undefined
  #delivered = false

  constructor(
    readonly method: string,
    public url: string,
    readonly headers: Record<string, string>,
    body: Buffer | undefined,
    /** What core's HTTP route turns into the call's transport (read through TRANSPORT_OVERRIDE). */
    readonly override: TransportOverride,
  ) {
    this.#body = body
    this.socket = new LeanSocket(override.clientIp)
  }

  get connection(): LeanSocket {
    return this.socket
  }

  setEncoding(encoding: BufferEncoding): this {
    this.#encoding = encoding
    return this
  }

  pause(): this {
    return this
  }

  /** Fastify's body reader attaches `data`/`end` listeners, then resumes: the body flows at once. */
  resume(): this {
    if (this.#delivered || this.aborted) return this
    this.#delivered = true
    const body = this.#body
    this.#body = undefined
    if (body !== undefined && body.length > 0)
      this.emit('data', this.#encoding ? body.toString(this.#encoding) : body)
    this.complete = true
    this.readable = false
    this.emit('end')
    return this
  }

  read(): Buffer | string | null {
    if (this.#delivered) return null
    this.#delivered = true
    const body = this.#body
    this.#body = undefined
    this.complete = true
    this.readable = false
    queueMicrotask(() => this.emit('end'))
    if (body === undefined || body.length === 0) return null
    return this.#encoding ? body.toString(this.#encoding) : body
  }

  /** For a preParsing hook that pipes the body into a transform (decompression, hashing…). */
  pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    const body = this.#delivered ? undefined : this.#body
    this.#delivered = true
    this.#body = undefined
    queueMicrotask(() => {
      if (body !== undefined && body.length > 0) destination.write(body)
      if (options?.end !== false) destination.end()
      this.complete = true
      this.readable = false
      this.emit('end')
    })
    return destination
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer | string> {
    const body = this.#delivered ? undefined : this.#body
    this.#delivered = true
    this.#body = undefined
    this.complete = true
    this.readable = false
    if (body !== undefined && body.length > 0) yield this.#encoding ? body.toString(this.#encoding) : body
  }

  /** The call was cancelled (CANCEL frame, connection closed): `close` as for a client gone away. */
  destroy(err?: Error): this {
    if (this.destroyed) return this
    this.destroyed = true
    this.aborted = true
    this.readable = false
    if (err) this.once('error', noop).emit('error', err)
    this.emit('close')
    return this
  }
}
Object.setPrototypeOf(LeanRequest.prototype, EventEmitter.prototype)
