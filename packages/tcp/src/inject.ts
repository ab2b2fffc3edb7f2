// Inject mode: a unary REQUEST frame replayed as `app.inject()` on the endpoint's own route, so every
// Fastify hook of the application runs. A global onRequest hook recognises the injected request and
// copies the frame's transport (protocol `tcp`, metadata, socket address) into core's
// TRANSPORT_OVERRIDE (a private Symbol: no HTTP client can set it). The URL is built from the
// registry's HTTP mapping, never from the frame's text.
//
// How the hook recognises a bridged request: the call's BridgeStore (an instance of a module-private
// class) rides on light-my-request's `simulate` option, which it keeps by reference on the raw request
// (`request.raw._lightMyRequest.simulate`). An HTTP request has no such property, and nothing outside
// this module can make a BridgeStore. That relies on a light-my-request detail, so the first calls also
// run inside AsyncLocalStorage (the documented way): once a call shows the marker arrived, the ALS is
// disabled for good (an active ALS puts async hooks on every promise of the process); if the marker
// never arrives, every call keeps using the ALS.
import { AsyncLocalStorage } from 'node:async_hooks'
import {
  type EndpointDefinition,
  jsonFormat,
  TRANSPORT_OVERRIDE,
  type TransportOverride,
  type TriviumCall,
  ValidationException,
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

const CALL = Symbol.for('trivium.call')

class BridgeStore {
  /** The Fastify request once the onRequest hook saw it. */
  request: FastifyRequest | undefined = undefined
  /** The hook found this store through light-my-request's `simulate` option (not the ALS). */
  viaSimulate = false
  constructor(
    readonly override: TransportOverride,
    readonly entry: Cancellation,
  ) {}
}

export interface InjectOutcome {
  ok: boolean
  /** RESPONSE payload bytes, or the error body (JSON) for an ERROR frame. */
  body: Uint8Array
  /** The call the route built (for the connection's identity), when the route ran. */
  call: TriviumCall | undefined
}

type Mode = 'probe' | 'simulate' | 'als'

/** What the raw request looks like when light-my-request made it. */
interface InjectedRaw {
  _lightMyRequest?: { simulate?: unknown }
  destroy(err?: Error): void
}

function abortError(reason: unknown): Error {
  const err = new Error('The operation was aborted', { cause: reason })
  err.name = 'AbortError'
  return err
}

export class InjectBridge {
  readonly #als = new AsyncLocalStorage<BridgeStore>()
  #mode: Mode = 'probe'
  /** Header objects by accept + content type: light-my-request copies them, so one per pair is enough. */
  readonly #headers = new Map<string, Record<string, string>>()

  constructor(private readonly fastify: FastifyInstance) {
    // Callback style: no promise per request (the hook runs for every HTTP request too).
    fastify.addHook(
      'onRequest',
      (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
        const store = this.#storeOf(request)
        if (store !== undefined) {
          ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = store.override
          store.request = request
          // Cancelled before the route started: stop it now (later cancels go through `onAbort`).
          if (store.entry.aborted)
            (request.raw as unknown as InjectedRaw).destroy(abortError(store.entry.reason))
        }
        done()
      },
    )
  }

  #storeOf(request: FastifyRequest): BridgeStore | undefined {
    const marker = (request.raw as unknown as InjectedRaw)._lightMyRequest?.simulate
    if (marker instanceof BridgeStore) {
      marker.viaSimulate = true
      return marker
    }
    return this.#mode === 'simulate' ? undefined : this.#als.getStore()
  }

  #headersFor(accept: WireFormat, contentType: string | undefined): Record<string, string> {
    const key = contentType === undefined ? accept.contentType : `${accept.contentType}\n${contentType}`
    let headers = this.#headers.get(key)
    if (headers === undefined) {
      headers = { accept: accept.contentType }
      if (contentType !== undefined) headers['content-type'] = contentType
      this.#headers.set(key, headers)
    }
    return headers
  }

  /** The callback form: light-my-request then dispatches at once (the promise form adds a Chain and a tick). */
  #inject(options: InjectOptions): Promise<LightMyRequestResponse> {
    return new Promise((resolve, reject) => {
      this.fastify.inject(options, (err, res) => {
        if (err || res === undefined) reject(err ?? new Error('inject returned no response'))
        else resolve(res)
      })
    })
  }

  async call(
    definition: EndpointDefinition,
    format: WireFormat,
    accept: WireFormat,
    payload: Uint8Array,
    override: TransportOverride,
    entry: Cancellation,
  ): Promise<InjectOutcome> {
    const mapping = definition.http
    let url: string
    let body: Buffer | string | undefined
    let contentType: string | undefined
    if (mapping.hasBody && mapping.pathParams.length === 0) {
      // The payload goes through untouched: core decodes it lazily, after authentication.
      url = mapping.url
      if (payload.length > 0) {
        body = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
        contentType = format.contentType
      }
    } else if (!mapping.hasBody && mapping.pathParams.length === 0 && isEmptyJson(format, payload)) {
      // `{}` (or nothing) as JSON maps to the bare URL: skip decode → toHttp → URLSearchParams.
      url = mapping.url
    } else {
      const parts = mapping.toHttp(toJson(definition, format, payload))
      url = parts.url
      if (parts.body !== undefined) {
        body = JSON.stringify(parts.body)
        contentType = jsonFormat.contentType
      }
    }
    const store = new BridgeStore(override, entry)
    entry.onAbort = (reason) => {
      const raw = store.request?.raw as unknown as InjectedRaw | undefined
      raw?.destroy(abortError(reason))
    }
    const options = {
      method: definition.method,
      url,
      headers: this.#headersFor(accept, contentType),
      payload: body,
      remoteAddress: override.clientIp,
      simulate: store,
      // The options are built here, always well-formed: skip light-my-request's schema check.
      validate: false,
    } as unknown as InjectOptions
    const res =
      this.#mode === 'simulate'
        ? await this.#inject(options)
        : await this.#als.run(store, () => this.#inject(options))
    entry.onAbort = undefined
    if (this.#mode === 'probe' && store.request !== undefined) {
      this.#mode = store.viaSimulate ? 'simulate' : 'als'
      if (this.#mode === 'simulate') this.#als.disable()
    }
    const call = (store.request as unknown as Record<symbol, TriviumCall | undefined> | undefined)?.[CALL]
    return { ok: res.statusCode < 400, body: res.rawPayload, call }
  }
}

function isEmptyJson(format: WireFormat, payload: Uint8Array): boolean {
  return (
    format === jsonFormat &&
    (payload.length === 0 || (payload.length === 2 && payload[0] === 0x7b && payload[1] === 0x7d))
  )
}

function toJson(definition: EndpointDefinition, format: WireFormat, payload: Uint8Array): unknown {
  if (format !== jsonFormat) return definition.request.toJSON(format.decode(definition.request, payload))
  if (payload.length === 0) return {}
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(payload)
  } catch {
    throw new ValidationException('Payload is not valid UTF-8')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new ValidationException('Request body is not valid JSON')
  }
}
