// Node's own request, response and connection objects for the route bridge (route-bridge.ts), each
// built with its public constructor and extended only through documented overrides: a Readable's
// `_read`, a ServerResponse subclass's `writeHead`/`write`/`end`, a Duplex's `_read`/`_write`/`_writev`.
import { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Duplex } from 'node:stream'
import { FRAME_TRANSPORT, type TransportOverride } from '@trivium/core/internal'
import type { FastifyReply } from 'fastify'
import type { StreamSink } from './named-route-stream.js'

/**
 * The request: Node's own, its body handed over when the route reads it (Readable's `_read`, the method
 * a Readable implementation provides). Node's server pushes a body as the parser reads it and ends the
 * stream at once; here nothing is pushed until something reads, so a route that never reads its body (a
 * GET) costs no push and none of the two ticks a pushed end schedules (`emitReadable`, `maybeReadMore`).
 */
export class FrameRequest extends IncomingMessage {
  #body: Buffer | undefined
  #pushed = false

  constructor(socket: FrameSocket, body: Buffer | undefined) {
    super(socket as unknown as Socket)
    this.#body = body
  }

  override _read(): void {
    if (this.#pushed) return
    this.#pushed = true
    const body = this.#body
    this.#body = undefined
    if (body !== undefined && body.length > 0) this.push(body)
    this.push(null)
  }
}

export function emitClose(res: ServerResponse): void {
  res.emit('close')
}

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (typeof chunk === 'string')
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  return undefined
}

/**
 * The response: Node's own, recording the body it is given. `write` and `end` are Node's public
 * methods, overridden as a subclass (Node's `ServerResponse` option of `http.createServer` invites
 * subclasses: "useful for extending the original ServerResponse"); everything else (headers,
 * `finish`/`close`, hijack) is Node's. What Node formats and writes to the socket is dropped there.
 */
export class FrameResponse extends ServerResponse {
  /** What the route wrote: UTF-8 text kept as the string it was given, anything else as bytes. */
  #chunks: (Buffer | string)[] = []
  /** The answer's Content-Type: Fastify gives its headers to `writeHead`, which `getHeader` does not see. */
  contentType: string | undefined = undefined
  /** A streaming named route's reader; `#streaming` once the answer turned out to be its stream. */
  sink: StreamSink | undefined = undefined
  #streaming = false

  override writeHead(...args: any[]): this {
    const headers = typeof args[1] === 'object' ? args[1] : args[2]
    const set = this.getHeader('content-type')
    this.contentType = contentTypeOf(headers) ?? (typeof set === 'string' ? set : undefined)
    if (this.sink !== undefined && !this.headersSent)
      this.#streaming = this.sink.open(Number(args[0]), this.contentType)
    return (super.writeHead as (...a: any[]) => this)(...args)
  }

  /** A chunk of a streamed answer goes to the reader, not to Node (whose formatted bytes are dropped anyway). */
  #stream(chunk: unknown, encoding: unknown, callback: unknown): boolean {
    const bytes = toBuffer(chunk, encoding)
    const done = typeof encoding === 'function' ? encoding : callback
    if (typeof done === 'function') process.nextTick(done as () => void)
    if (bytes === undefined || bytes.length === 0 || this.destroyed) return true
    return (this.sink as StreamSink).write(bytes, () => this.emit('drain'))
  }

  #record(chunk: unknown, encoding: unknown): void {
    if (this.writableEnded || this.destroyed) return
    if (
      typeof chunk === 'string' &&
      (encoding === undefined || encoding === 'utf8' || encoding === 'utf-8')
    ) {
      if (chunk.length > 0) this.#chunks.push(chunk)
      return
    }
    const bytes = toBuffer(chunk, encoding)
    if (bytes !== undefined && bytes.length > 0) this.#chunks.push(bytes)
  }

  override write(chunk: any, encoding?: any, callback?: any): boolean {
    if (!this.headersSent && this.sink !== undefined) this.writeHead(this.statusCode)
    if (this.#streaming) return this.#stream(chunk, encoding, callback)
    this.#record(chunk, encoding)
    return super.write(chunk, encoding, callback)
  }

  override end(chunk?: any, encoding?: any, callback?: any): this {
    if (this.writableEnded) return super.end(chunk, encoding, callback)
    if (!this.headersSent && this.sink !== undefined) this.writeHead(this.statusCode)
    if (this.#streaming) {
      if (typeof chunk !== 'function' && chunk != null) this.#stream(chunk, encoding, undefined)
      ;(this.sink as StreamSink).end()
      chunk = typeof chunk === 'function' ? chunk : undefined
    } else if (typeof chunk !== 'function') this.#record(chunk, encoding)
    const socket = this.socket ?? this.req.socket
    const chunks = this.#chunks
    this.#chunks = []
    super.end(chunk, encoding, callback)
    // After Node's end: the status and headers are final (a hijacker's writeHead included).
    if (socket instanceof FrameSocket)
      socket.ended(this, chunks.length === 1 ? (chunks[0] as Buffer | string) : joined(chunks))
    return this
  }
}

function joined(chunks: (Buffer | string)[]): Buffer {
  return Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)))
}

function contentTypeOf(headers: unknown): string | undefined {
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return undefined
  // Fastify's header names are lower-case: the one lookup finds them; any other spelling is searched.
  const direct = (headers as Record<string, unknown>)['content-type']
  if (typeof direct === 'string') return direct
  for (const name in headers) {
    const value = (headers as Record<string, unknown>)[name]
    if (name.toLowerCase() === 'content-type' && typeof value === 'string') return value
  }
  return undefined
}

type Settle = (res: FrameResponse | undefined, body: Buffer | string | undefined) => void

/**
 * The in-memory connection (`request.raw.socket`): what Node writes to it (the formatted response) is
 * dropped (FrameResponse kept the body). One call at a time.
 */
export class FrameSocket extends Duplex {
  /** `request.socket.remoteAddress` (the request logger, `request.ip`): the TCP peer of the call. */
  remoteAddress: string | undefined = undefined
  override: TransportOverride | undefined = undefined;
  /** Read by core (`transportOf`) and the route guard: the request came from this frame transport. */
  [FRAME_TRANSPORT]: TransportOverride | undefined = undefined
  reply: FastifyReply | undefined = undefined
  #settle: Settle | undefined = undefined

  constructor() {
    super({ allowHalfOpen: true })
    this.on('close', () => this.#finish(undefined, undefined))
  }

  start(override: TransportOverride, settle: Settle): void {
    this.remoteAddress = override.clientIp
    this.override = override
    this[FRAME_TRANSPORT] = override
    this.reply = undefined
    this.#settle = settle
  }

  ended(res: FrameResponse, body: Buffer | string): void {
    this.#finish(res, body)
  }

  #finish(res: FrameResponse | undefined, body: Buffer | string | undefined): void {
    const settle = this.#settle
    if (settle === undefined) return
    this.#settle = undefined
    settle(res, body)
  }

  override _read(): void {}

  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    callback()
  }

  override _writev(_chunks: unknown[], callback: (err?: Error | null) => void): void {
    callback()
  }
}
