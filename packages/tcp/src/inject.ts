// Inject mode: a unary REQUEST frame replayed as `app.inject()` on the endpoint's own route, so every
// Fastify hook of the application runs. The request is marked as TCP through AsyncLocalStorage, read
// once by a global onRequest hook into core's TRANSPORT_OVERRIDE (a private Symbol: no HTTP client can
// set it). The URL is built from the registry's HTTP mapping, never from the frame's text.
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
import type { FastifyInstance, FastifyRequest } from 'fastify'

interface BridgeStore {
  override: TransportOverride
  onCall(call: TriviumCall): void
}

const CALL = Symbol.for('trivium.call')

export interface InjectOutcome {
  ok: boolean
  /** RESPONSE payload bytes, or the error body (JSON) for an ERROR frame. */
  body: Uint8Array
}

export class InjectBridge {
  readonly #als = new AsyncLocalStorage<BridgeStore>()
  readonly #stores = new WeakMap<FastifyRequest, BridgeStore>()

  constructor(private readonly fastify: FastifyInstance) {
    fastify.addHook('onRequest', async (request) => {
      const store = this.#als.getStore()
      if (!store) return
      ;(request as unknown as Record<symbol, unknown>)[TRANSPORT_OVERRIDE] = store.override
      this.#stores.set(request, store)
    })
    fastify.addHook('onResponse', async (request) => {
      const store = this.#stores.get(request)
      const call = (request as unknown as Record<symbol, TriviumCall | undefined>)[CALL]
      if (store && call) store.onCall(call)
    })
  }

  async call(
    definition: EndpointDefinition,
    format: WireFormat,
    accept: WireFormat,
    payload: Uint8Array,
    override: TransportOverride,
    signal: AbortSignal,
    onCall: (call: TriviumCall) => void,
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
    } else {
      const parts = mapping.toHttp(toJson(definition, format, payload))
      url = parts.url
      if (parts.body !== undefined) {
        body = JSON.stringify(parts.body)
        contentType = jsonFormat.contentType
      }
    }
    const headers: Record<string, string> = { accept: accept.contentType }
    if (contentType) headers['content-type'] = contentType
    const store: BridgeStore = { override, onCall }
    const res = await this.#als.run(store, async () =>
      this.fastify.inject({
        method: definition.method,
        url,
        headers,
        payload: body,
        remoteAddress: override.clientIp,
        signal,
      }),
    )
    return { ok: res.statusCode < 400, body: new Uint8Array(res.rawPayload) }
  }
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
