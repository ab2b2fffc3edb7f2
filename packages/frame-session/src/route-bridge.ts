// The route bridge: a unary REQUEST frame handed to Fastify's own request handling on the endpoint's
// route, so every Fastify hook of the application runs. Every frame transport uses it for named Fastify
// routes (`config.triviumRoute.name`, PROTOCOL.md "Named routes"); @trivium/tcp's inject mode uses it for
// every unary endpoint. The payload is decoded by the frame rules first (the
// same decoder as direct mode); the HTTP request is then built from the decoded model through the
// registry's HTTP mapping, never from the frame's text.
//
// Documented surfaces only (issue 31). The default path (objects in bridge-objects.ts) builds Node's own
// request and response with their public constructors, as Node's HTTP server does after parsing: `new
// IncomingMessage(socket)` with its documented fields set (`method`, `url`, `headers`, `rawHeaders`,
// `httpVersion`, `complete`) and the body handed over through the Readable API when the route reads it
// (`_read`); `new FrameResponse(req)` (a `ServerResponse` subclass
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
import type { Socket } from 'node:net'
import type { EndpointDefinition, TriviumCall, WireFormat } from '@trivium/core'
import {
  decodeRequest,
  FRAME_TRANSPORT,
  isNamedRoute,
  isThenable,
  jsonFormat,
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
import { emitClose, FrameRequest, FrameResponse, FrameSocket } from './bridge-objects.js'
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

/**
 * The route's answer as it wrote it, before the error body gets the frame's request id: the text it
 * ended with when that was its one UTF-8 chunk (the carrier encodes it into the frame once), else bytes.
 */
export interface RouteAnswer extends InjectOutcome {
  body: Uint8Array | string
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

/** The HTTP request a decoded frame payload maps to. */
interface HttpForm {
  url: string
  body: Buffer | undefined
  contentType: string | undefined
}

/**
 * The frame's payload decoded by the frame rules (as direct mode does: core's `decodeRequest`, where
 * zero bytes are the empty model, and the same refusal of a format the endpoint has no codec for), then
 * the HTTP request carrying it: the original bytes when they are the whole body, else the URL/body
 * `toHttp` builds from the model.
 */
export function httpFormOf(
  definition: EndpointDefinition,
  format: WireFormat,
  payload: Uint8Array,
): HttpForm | PromiseLike<HttpForm> {
  const value = decodeRequest(definition.name, format, definition.request, payload, definition.response)
  // An asynchronous model: the form is built once its checks have settled.
  if (isThenable(value)) return value.then((settled) => formOf(definition, payload, format, settled))
  return formOf(definition, payload, format, value)
}

function formOf(
  definition: EndpointDefinition,
  payload: Uint8Array,
  format: WireFormat,
  value: unknown,
): HttpForm {
  const model = definition.request
  const mapping = definition.http
  if (mapping.hasBody && mapping.pathParams.length === 0) {
    // The decode proved the bytes valid: they go through as they are (no re-encoding).
    if (payload.length === 0) return { url: mapping.url, body: undefined, contentType: undefined }
    return {
      url: mapping.url,
      body: Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      contentType: format.contentType,
    }
  }
  const json = model.toJSON(value)
  if (mapping.pathParams.length === 0 && !mapping.hasBody && isEmptyObject(json)) {
    return { url: mapping.url, body: undefined, contentType: undefined }
  }
  const parts = mapping.toHttp(json)
  if (parts.body === undefined) return { url: parts.url, body: undefined, contentType: undefined }
  return {
    url: parts.url,
    body: Buffer.from(JSON.stringify(parts.body)),
    contentType: jsonFormat.contentType,
  }
}

/**
 * The request's headers: the formats, and for a frame that carries a credential (a named route's call)
 * `Authorization: Bearer …`, as an HTTP client sends it, so the route's own hooks (@fastify/jwt,
 * @fastify/auth) read it where they always do.
 */
function requestHeaders(
  form: HttpForm,
  accept: string,
  override: TransportOverride,
): [headers: Record<string, string>, rawHeaders: string[]] {
  const headers: Record<string, string> = { accept }
  const raw = ['accept', accept]
  if (form.contentType !== undefined) {
    const length = String(form.body?.length ?? 0)
    headers['content-type'] = form.contentType
    headers['content-length'] = length
    raw.push('content-type', form.contentType, 'content-length', length)
  }
  if (override.credential !== undefined) {
    const authorization = `Bearer ${override.credential}`
    headers.authorization = authorization
    raw.push('authorization', authorization)
  }
  return [headers, raw]
}

function isEmptyObject(json: unknown): boolean {
  if (json === undefined || json === null) return true
  if (typeof json !== 'object') return false
  for (const key in json) if ((json as Record<string, unknown>)[key] !== undefined) return false
  return true
}

export class InjectBridge implements UnaryBridge {
  readonly #idle: FrameSocket[] = []
  /** Only on the app.inject() path (an AsyncLocalStorage costs every promise of the process once used). */
  readonly #marker: AsyncLocalStorage<InjectMarker> | undefined

  /**
   * `options.lean: false` serves every frame through `app.inject()`: for the equivalence tests and for
   * comparing the two paths.
   */
  /**
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
    const { definition } = bridged
    let form: HttpForm | PromiseLike<HttpForm>
    try {
      form = settled ?? httpFormOf(definition, bridged.format, bridged.payload)
    } catch (err) {
      return Promise.reject(err) // a promise either way: the frame session awaits or chains it
    }
    // An asynchronous request model: the HTTP request is built once its checks have settled.
    if (isThenable(form)) return Promise.resolve(form).then((ready) => this.call(bridged, ready, sink))
    if (this.#marker !== undefined && sink === undefined)
      return this.#inject(this.#marker, bridged, form).then((answer) => this.#outcome(bridged, answer))
    return new Promise((resolve) => this.#lean(bridged, form, resolve, sink))
  }

  /** The frame's answer from the route's: a named route's checked, an error body given the frame's request id. */
  #outcome(bridged: BridgedCall, answer: RouteAnswer): InjectOutcome {
    const { definition } = bridged
    const final = isNamedRoute(definition) ? namedRouteOutcome(this.fastify.log, definition, answer) : answer
    return final.ok ? final : { ...final, body: withRequestId(final.body, bridged.requestId) }
  }

  /** Runs the frame through `fastify.routing` on Node's objects built in memory; `resolve` gets the outcome. */
  #lean(
    bridged: BridgedCall,
    form: HttpForm,
    resolve: (outcome: InjectOutcome) => void,
    sink: StreamSink | undefined,
  ): void {
    const { definition, accept, override, entry } = bridged
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
    const req = new FrameRequest(socket, form.body)
    req.method = definition.method
    req.url = form.url
    req.httpVersion = '1.1'
    req.httpVersionMajor = 1
    req.httpVersionMinor = 1
    const [headers, rawHeaders] = requestHeaders(form, sink?.accept ?? accept.contentType, override)
    req.headers = headers
    req.rawHeaders = rawHeaders
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
      res.on('finish', () => {
        res.detachSocket(socket as unknown as Socket)
        this.#release(socket)
        process.nextTick(emitClose, res)
      })
      const answer: RouteAnswer = {
        ok: res.statusCode < 400,
        body,
        call,
        path: 'lean',
        statusCode: res.statusCode,
        contentType: res.contentType,
      }
      resolve(this.#outcome(bridged, answer))
    })
    this.fastify.routing(req, res)
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
    const [headers] = requestHeaders(form, accept.contentType, override)
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
function withRequestId(body: Uint8Array | string, requestId: string): Uint8Array | string {
  try {
    const parsed = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body))
    if (parsed && typeof parsed === 'object') {
      parsed.requestId = requestId
      return JSON.stringify(parsed)
    }
  } catch {
    /* not JSON: pass through */
  }
  return body
}
