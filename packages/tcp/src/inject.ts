// Inject mode: a unary REQUEST frame handed to Fastify's own request handling on the endpoint's route,
// so every Fastify hook of the application runs. The payload is decoded by the frame rules first (the
// same decoder as direct mode); the HTTP request is then built from the decoded model through the
// registry's HTTP mapping, never from the frame's text.
//
// Lean path (the default): `fastify.routing(req, res)` with a LeanRequest/LeanResponse pair (the part
// of IncomingMessage/ServerResponse Fastify and hooks use) instead of light-my-request's full streams.
// Fallback: `app.inject()` for an endpoint whose reply was seen hijacked (a hook took over the raw
// response: it gets light-my-request's complete ServerResponse from then on). The rule is in the README.
//
// Marking the request as TCP: a callback-style onRequest hook copies the frame's transport (protocol
// `tcp`, metadata, socket address) into core's TRANSPORT_OVERRIDE (a private Symbol) when the raw
// request is a LeanRequest (a class no HTTP request can be) or carries an InjectMarker (module-private
// class, passed by reference as light-my-request's `simulate` option on the fallback path).
import {
  decodePayload,
  type EndpointDefinition,
  jsonFormat,
  TRANSPORT_OVERRIDE,
  type TransportOverride,
  type TriviumCall,
  UnsupportedMediaTypeException,
  type WireFormat,
} from '@trivium/core'
import type { Cancellation } from '@trivium/wire'
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  InjectOptions,
  LightMyRequestResponse,
} from 'fastify'
import { LeanRequest } from './lean-request.js'
import { LeanResponse } from './lean-response.js'

const CALL = Symbol.for('trivium.call')
const EMPTY = new Uint8Array(0)

export interface InjectOutcome {
  ok: boolean
  /** RESPONSE payload bytes, or the error body (JSON) for an ERROR frame. */
  body: Uint8Array
  /** The call the route built (for the connection's identity), when the route ran. */
  call: TriviumCall | undefined
  /** Which path served the frame: `lean` (Fastify's router) or `inject` (`app.inject()`). */
  path: 'lean' | 'inject'
}

/** The fallback path's marker (light-my-request keeps `simulate` by reference on the raw request). */
class InjectMarker {
  request: FastifyRequest | undefined = undefined
  constructor(readonly override: TransportOverride) {}
}

interface InjectedRaw {
  _lightMyRequest?: { simulate?: unknown }
  destroy(err?: Error): void
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

/** One frame's call, ready for either path. */
interface BridgedRequest {
  definition: EndpointDefinition
  form: HttpForm
  headers: Record<string, string>
  override: TransportOverride
  entry: Cancellation
}

/**
 * The frame's payload decoded by the frame rules (as direct mode does: core's `decodePayload`, where
 * zero bytes are the empty model, and the same refusal of a format the endpoint has no codec for), then the HTTP request carrying it: the
 * original bytes when they are the whole body, else the URL/body `toHttp` builds from the model.
 */
export function httpFormOf(
  definition: EndpointDefinition,
  format: WireFormat,
  payload: Uint8Array,
): HttpForm {
  const model = definition.request
  if (payload.length > 0 && format.name !== 'json' && !model.decode) {
    throw new UnsupportedMediaTypeException(
      `Endpoint ${definition.name} has no ${format.name} request format`,
    )
  }
  const value = decodePayload(format, model, payload)
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

function isEmptyObject(json: unknown): boolean {
  if (json === undefined || json === null) return true
  if (typeof json !== 'object') return false
  for (const key in json) if ((json as Record<string, unknown>)[key] !== undefined) return false
  return true
}

export class InjectBridge {
  /** Endpoints served by `app.inject()` (their reply was seen hijacked). */
  readonly #fallback = new WeakSet<EndpointDefinition>()

  /**
   * `options.lean: false` serves every frame through `app.inject()` (the fallback path): for the
   * equivalence tests and for comparing the two paths.
   */
  constructor(
    private readonly fastify: FastifyInstance,
    private readonly options: { lean?: boolean } = {},
  ) {
    // Callback style: no promise per request (the hook runs for every HTTP request too).
    fastify.addHook(
      'onRequest',
      (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
        const raw = request.raw as unknown
        if (raw instanceof LeanRequest) {
          ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = raw.override
          raw.reply = reply
        } else {
          const marker = (raw as InjectedRaw)._lightMyRequest?.simulate
          if (marker instanceof InjectMarker) {
            ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = marker.override
            marker.request = request
          }
        }
        done()
      },
    )
  }

  /** Whether `definition` is served by `app.inject()` rather than the lean path. */
  usesFallback(definition: EndpointDefinition): boolean {
    return this.options.lean === false || this.#fallback.has(definition)
  }

  call(
    definition: EndpointDefinition,
    format: WireFormat,
    accept: WireFormat,
    payload: Uint8Array,
    override: TransportOverride,
    entry: Cancellation,
  ): Promise<InjectOutcome> {
    let form: HttpForm
    try {
      form = httpFormOf(definition, format, payload)
    } catch (err) {
      return Promise.reject(err) // a promise either way: the frame session awaits or chains it
    }
    const headers: Record<string, string> = { accept: accept.contentType }
    if (form.contentType !== undefined) {
      headers['content-type'] = form.contentType
      headers['content-length'] = String(form.body?.length ?? 0)
    }
    const request: BridgedRequest = { definition, form, headers, override, entry }
    return this.usesFallback(definition) ? this.#inject(request) : this.#lean(request)
  }

  #lean({ definition, form, headers, override, entry }: BridgedRequest): Promise<InjectOutcome> {
    return new Promise((resolve) => {
      const req = new LeanRequest(definition.method, form.url, headers, form.body, override)
      const res = new LeanResponse(req.socket, (res, body) => {
        entry.onAbort = undefined
        const reply = req.reply
        // `reply.sent` before the response counts as ended: only a hijack makes it true.
        if (reply?.sent === true) {
          // A hook took the raw response over: this call gets what it wrote (as app.inject() would
          // capture it); the endpoint's later calls go through app.inject()'s complete ServerResponse.
          this.#fallback.add(definition)
          this.fastify.log.warn(
            { endpoint: definition.name },
            '@trivium/tcp: a hook hijacked the reply of an injected frame; this endpoint now uses app.inject()',
          )
        }
        const call = (reply?.request as unknown as Record<symbol, TriviumCall | undefined> | undefined)?.[
          CALL
        ]
        if (body === undefined) resolve({ ok: false, body: EMPTY, call, path: 'lean' })
        else resolve({ ok: res.statusCode < 400, body, call, path: 'lean' })
      })
      if (entry.aborted) {
        res.destroy()
        return
      }
      entry.onAbort = () => {
        // As for an HTTP client gone away: `close` on both (core's call.signal, Fastify's handler
        // timeout); whatever the route still writes is dropped.
        res.destroy()
        req.destroy()
      }
      this.fastify.routing(req as never, res as never)
    })
  }

  async #inject({ definition, form, headers, override, entry }: BridgedRequest): Promise<InjectOutcome> {
    const marker = new InjectMarker(override)
    entry.onAbort = (reason) => {
      const raw = marker.request?.raw as unknown as InjectedRaw | undefined
      raw?.destroy(abortError(reason))
    }
    const options = {
      method: definition.method,
      url: form.url,
      headers,
      payload: form.body,
      remoteAddress: override.clientIp,
      simulate: marker,
      // The options are built here, always well-formed: skip light-my-request's schema check.
      validate: false,
    } as unknown as InjectOptions
    try {
      const res = await new Promise<LightMyRequestResponse>((resolve, reject) => {
        // The callback form dispatches at once (the promise form adds a Chain and a tick).
        this.fastify.inject(options, (err, res) => {
          if (err || res === undefined) reject(err ?? new Error('inject returned no response'))
          else resolve(res)
        })
      })
      const call = (marker.request as unknown as Record<symbol, TriviumCall | undefined> | undefined)?.[CALL]
      return { ok: res.statusCode < 400, body: res.rawPayload, call, path: 'inject' }
    } finally {
      entry.onAbort = undefined
    }
  }
}
