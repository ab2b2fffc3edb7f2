// The route bridge: a unary REQUEST frame handed to Fastify's own request handling on the endpoint's
// route, so every Fastify hook of the application runs. Every frame transport uses it for named Fastify
// routes (`config.triviumRoute.name`, PROTOCOL.md "Named routes"); @trivium/tcp's inject mode uses it for
// every unary endpoint. The payload is decoded by the frame rules first (the
// same decoder as direct mode); the HTTP request is then built from the decoded model through the
// registry's HTTP mapping, never from the frame's text.
//
// Documented surfaces only (issue 31). The default path builds Node's own request and response with
// their public constructors, as Node's HTTP server does after parsing: `new IncomingMessage(socket)`
// with its documented fields set (`method`, `url`, `headers`, `rawHeaders`, `httpVersion`, `complete`)
// and the body pushed through the Readable API; `new FrameResponse(req)` (a `ServerResponse` subclass
// recording what `write`/`end` are given before calling Node's own) bound to an in-memory socket with
// `assignSocket`/`detachSocket` (public methods of `ServerResponse`, declared in Node's typings; Node's
// server, light-my-request and @fastify/websocket bind theirs the same way); then `fastify.routing(req,
// res)` (documented). No socket, no kernel, no HTTP bytes written or parsed: the previous version wrote
// the request as HTTP/1.1 bytes into a private `http.Server` and cost 2–3× the CPU per call
// (packages/tcp/README.md). One in-memory socket serves one call at a time (pooled).
// `options.lean: false` serves frames through `app.inject()` instead (tests and bench/transports compare
// the two), the call identified through an `AsyncLocalStorage`.
//
// Marking the request as TCP: a callback-style onRequest hook copies the frame's transport (protocol
// `tcp`, metadata, socket address) into core's TRANSPORT_OVERRIDE when `request.raw.socket` is one of
// this module's FrameSockets (no HTTP client's socket can be), or the async context is a bridged
// `app.inject()` call's.
import { AsyncLocalStorage } from 'node:async_hooks'
import { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { Duplex } from 'node:stream'
import type { EndpointDefinition, TriviumCall } from '@trivium/core'
import {
  FRAME_TRANSPORT,
  isNamedRoute,
  isThenable,
  TRANSPORT_OVERRIDE,
  type TransportOverride,
} from '@trivium/core/internal'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  LightMyRequestResponse,
} from 'fastify'
import { type HttpForm, httpFormOf, rawHeadersOf, requestHeaders } from './http-form.js'
import { namedRouteOutcome } from './named-route-answer.js'
import { runNamedStream, type StreamSink } from './named-route-stream.js'
import type { BridgedCall, BridgedOutcome, CallHost, CallStart, UnaryBridge } from './unary.js'

const CALL = Symbol.for('trivium.call')
const EMPTY = new Uint8Array(0)
/** Idle FrameSockets kept per bridge: one per call in flight up to this (more are made, then dropped). */
const POOL_SIZE = 256

export interface InjectOutcome extends BridgedOutcome {
  /** RESPONSE payload bytes, or the error body (JSON, its requestId the frame's) for an ERROR frame. */
  body: Uint8Array | string
  /** Which path served the frame: `lean` (Node's request/response built in memory) or `inject` (`app.inject()`). */
  path: 'lean' | 'inject'
  /** The route's HTTP status and Content-Type (a named route's answer is checked against them). */
  statusCode: number
  contentType: string | undefined
}

/** The route's answer as it wrote it, before the error body gets the frame's request id. */
export interface RouteAnswer extends InjectOutcome {
  body: Uint8Array
}

/** The fallback path's marker, found through the AsyncLocalStorage by the first request it reaches. */
class InjectMarker {
  request: FastifyRequest | undefined = undefined
  constructor(readonly override: TransportOverride) {}
}

function abortError(reason: unknown): Error {
  const err = new Error('The operation was aborted', { cause: reason })
  err.name = 'AbortError'
  return err
}

function emitClose(res: ServerResponse): void {
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
class FrameResponse extends ServerResponse {
  #chunks: Buffer[] = []
  /** The answer's Content-Type: Fastify gives its headers to `writeHead`, which `getHeader` does not see. */
  contentType: string | undefined = undefined
  /** A streaming named route's reader; `#streaming` once the answer turned out to be its stream. */
  sink: StreamSink | undefined = undefined
  #streaming = false

  override writeHead(...args: any[]): this {
    const headers = typeof args[1] === 'object' ? args[1] : args[2]
    this.contentType =
      contentTypeOf(headers) ?? contentTypeOf({ 'content-type': this.getHeader('content-type') })
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
      socket.ended(this, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks))
    return this
  }
}

function contentTypeOf(headers: unknown): string | undefined {
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return undefined
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'content-type' && typeof value === 'string') return value
  }
  return undefined
}

type Settle = (res: FrameResponse | undefined, body: Buffer | undefined) => void

/**
 * The in-memory connection (`request.raw.socket`): what Node writes to it (the formatted response) is
 * dropped (FrameResponse kept the body). One call at a time.
 */
class FrameSocket extends Duplex {
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

  ended(res: FrameResponse, body: Buffer): void {
    this.#finish(res, body)
  }

  #finish(res: FrameResponse | undefined, body: Buffer | undefined): void {
    const settle = this.#settle
    if (settle === undefined) return
    this.#settle = undefined
    settle(res, body)
  }

  override _read(): void {}

  // What Node writes is dropped. The callback is called in a microtask, not at once: a callback called
  // within `_write` makes the Writable defer its completion with `process.nextTick`, whose tick object
  // (computed symbol keys) costs Node ~5,000 instructions; an asynchronous callback completes directly.
  override _write(_chunk: unknown, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    queueMicrotask(callback)
  }

  override _writev(_chunks: unknown[], callback: (err?: Error | null) => void): void {
    queueMicrotask(callback)
  }
}

export class InjectBridge implements UnaryBridge {
  readonly #idle: FrameSocket[] = []
  /** Only on the app.inject() path (an AsyncLocalStorage costs every promise of the process once used). */
  readonly #marker: AsyncLocalStorage<InjectMarker> | undefined

  /**
   * `options.lean: false` serves every frame through `app.inject()` (equivalence tests, comparing paths).
   * `options.markRequests: false` (the frame transports' bridge of named routes) adds no onRequest hook:
   * the route reads the transport from the socket (core's `transportOf`), and the call is not reported.
   */
  constructor(
    private readonly fastify: FastifyInstance,
    options: { lean?: boolean; markRequests?: boolean } = {},
  ) {
    this.#marker = options.lean === false ? new AsyncLocalStorage() : undefined
    const marker = this.#marker
    // Callback style: no promise per request (the hook runs for every HTTP request too).
    if (options.markRequests !== false)
      fastify.addHook(
        'onRequest',
        (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
          const socket = request.raw.socket
          if (socket instanceof FrameSocket) {
            ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = socket.override
            socket.reply = reply
          } else if (marker !== undefined) {
            const injected = marker.getStore()
            // The first request of the bridged app.inject() call only (not one its handler makes).
            if (injected !== undefined && injected.request === undefined) {
              ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = injected.override
              injected.request = request
            }
          }
          done()
        },
      )
    fastify.addHook('onClose', (_instance, done) => {
      for (const socket of this.#idle.splice(0)) socket.destroy()
      done()
    })
  }

  /** A streaming named route's call: its items sent as the route writes them (named-route-stream.ts). */
  stream(host: CallHost, start: CallStart, requestId: string, credential: string | undefined): Promise<void> {
    return runNamedStream(host, start, requestId, this, credential)
  }

  /** Whether frames are served by `app.inject()` rather than by Node's objects built in memory. */
  usesFallback(_definition?: EndpointDefinition): boolean {
    return this.#marker !== undefined
  }

  /** `sink`: a streaming named route's reader (its calls always take the lean path). */
  call(bridged: BridgedCall, settled?: HttpForm, sink?: StreamSink): Promise<InjectOutcome> {
    const { definition, requestId } = bridged
    let form: HttpForm | PromiseLike<HttpForm>
    try {
      form = settled ?? httpFormOf(definition, bridged.format, bridged.payload)
    } catch (err) {
      return Promise.reject(err) // a promise either way: the frame session awaits or chains it
    }
    // An asynchronous request model: the HTTP request is built once its checks have settled.
    if (isThenable(form)) return Promise.resolve(form).then((ready) => this.call(bridged, ready, sink))
    const out =
      this.#marker !== undefined && sink === undefined
        ? this.#inject(this.#marker, bridged, form)
        : this.#lean(bridged, form, sink)
    const named = isNamedRoute(definition)
    return out.then((answer) => {
      const final = named ? namedRouteOutcome(this.fastify.log, definition, answer) : answer
      return final.ok ? final : { ...final, body: withRequestId(final.body, requestId) }
    })
  }

  #lean(bridged: BridgedCall, form: HttpForm, sink: StreamSink | undefined): Promise<RouteAnswer> {
    const { definition, accept, override, entry } = bridged
    return new Promise((resolve) => {
      if (entry.aborted) {
        resolve({
          ok: false,
          body: EMPTY,
          call: undefined,
          path: 'lean',
          statusCode: 0,
          contentType: undefined,
        })
        return
      }
      const socket = this.#idle.pop() ?? new FrameSocket()
      const req = new IncomingMessage(socket as unknown as Socket)
      req.method = definition.method
      req.url = form.url
      req.httpVersion = '1.1'
      req.httpVersionMajor = 1
      req.httpVersionMinor = 1
      const headers = requestHeaders(form, accept, override)
      if (sink !== undefined) headers.accept = sink.accept
      req.headers = headers
      req.rawHeaders = rawHeadersOf(headers)
      if (form.body !== undefined && form.body.length > 0) req.push(form.body)
      req.push(null)
      req.complete = true
      const res = new FrameResponse(req)
      res.sink = sink
      res.assignSocket(socket as unknown as Socket)
      entry.onAbort = (reason) => {
        // As for an HTTP client gone away: the request is aborted and the connection closes (core's
        // call.signal, Fastify's onRequestAbort and handler timeout); what the route still writes is dropped.
        req.destroy(abortError(reason))
        socket.destroy()
      }
      socket.start(override, (done, body) => {
        entry.onAbort = undefined
        const call = (
          socket.reply?.request as unknown as Record<symbol, TriviumCall | undefined> | undefined
        )?.[CALL]
        if (done === undefined || body === undefined) {
          resolve({ ok: false, body: EMPTY, call, path: 'lean', statusCode: 0, contentType: undefined })
          return
        }
        // As Node's HTTP server does on `finish`: the socket is released, then the response emits
        // `close` in the next tick (listeners that clean up on `close`, as for any HTTP response).
        res.once('finish', () => {
          res.detachSocket(socket as unknown as Socket)
          this.#release(socket)
          process.nextTick(emitClose, res)
        })
        resolve({
          ok: res.statusCode < 400,
          body,
          call,
          path: 'lean',
          statusCode: res.statusCode,
          contentType: res.contentType,
        })
      })
      this.fastify.routing(req, res)
    })
  }

  #release(socket: FrameSocket): void {
    socket.reply = undefined
    socket.override = undefined
    socket[FRAME_TRANSPORT] = undefined
    if (socket.destroyed || !socket.writable || this.#idle.length >= POOL_SIZE) socket.destroy()
    else this.#idle.push(socket)
  }

  async #inject(
    context: AsyncLocalStorage<InjectMarker>,
    bridged: BridgedCall,
    form: HttpForm,
  ): Promise<RouteAnswer> {
    const { definition, accept, override, entry } = bridged
    const marker = new InjectMarker(override)
    entry.onAbort = (reason) => {
      marker.request?.raw.destroy(abortError(reason))
    }
    const headers = requestHeaders(form, accept, override)
    try {
      const res = await new Promise<LightMyRequestResponse>((resolve, reject) => {
        context.run(marker, () =>
          this.fastify.inject(
            {
              method: definition.method as 'GET',
              url: form.url,
              headers,
              payload: form.body,
              remoteAddress: override.clientIp,
            },
            (err, res) => {
              if (err || res === undefined) reject(err ?? new Error('inject returned no response'))
              else resolve(res)
            },
          ),
        )
      })
      const call = (marker.request as unknown as Record<symbol, TriviumCall | undefined> | undefined)?.[CALL]
      const contentType = res.headers['content-type']
      return {
        ok: res.statusCode < 400,
        body: res.rawPayload,
        call,
        path: 'inject',
        statusCode: res.statusCode,
        contentType: typeof contentType === 'string' ? contentType : undefined,
      }
    } finally {
      entry.onAbort = undefined
    }
  }
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
