// The HTTP transport: fetch (global in browsers and Node; undici's in the Node entry), one request per
// call, Server-Sent Events for streams (PROTOCOL.md "HTTP", "HTTP mapping", "HTTP streaming").
import {
  BINARY_CONTENT_TYPE,
  DEFAULT_COMPRESSION_THRESHOLD,
  IDEMPOTENCY_KEY_HEADER,
  JSON_CONTENT_TYPE,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  TIMEOUT_HEADER,
} from '@trivium/wire'
import { BaseClient, optionError, timeoutToSend, usageError } from './base.js'
import {
  CLIENT_CLOSED_MESSAGE,
  type ErrorBody,
  ForbiddenException,
  fromErrorBody,
  InternalErrorException,
  NetworkException,
  NotFoundException,
  RateLimitExceededException,
  ServiceUnavailableException,
  TriviumError,
  UnauthorizedException,
} from './errors.js'
import { toHttp } from './http-mapping.js'
import { readEventStream } from './sse.js'
import type {
  BidiStreamCall,
  ClientModel,
  ClientStreamCall,
  CommonClientOptions,
  EndpointSpec,
} from './types.js'

const TIMEOUT_HEADER_LOWER = TIMEOUT_HEADER.toLowerCase()

export { BINARY_CONTENT_TYPE, JSON_CONTENT_TYPE }

export type FetchLike = (input: string, init: RequestInit & Record<string, unknown>) => Promise<Response>

export interface HttpClientOptions extends CommonClientOptions {
  transport: 'http'
  /** Base URL; endpoint paths are appended to it, e.g. `https://api.example.com` or `http://host/prefix`. */
  url: string
  /** Extra headers on every request. */
  headers?: Record<string, string>
  /** The fetch to use (default: globalThis.fetch; the Node entry uses undici's with a pooled Agent). */
  fetch?: FetchLike
  /** Passed to fetch as `credentials` in browsers (default: not set). */
  credentials?: 'omit' | 'same-origin' | 'include'
  /**
   * Send request bodies of at least `threshold` bytes (default 1024) gzip-compressed, with
   * `Content-Encoding: gzip` (PROTOCOL.md "Compression"; a Trivium server always reads it). Default off.
   * Responses need no option: fetch sends Accept-Encoding and inflates what comes back.
   */
  compressRequests?: boolean | { threshold?: number }
}

/** Internals the Node entry adds: extra fetch init (undici dispatcher) and a close hook. */
export interface HttpInternals {
  init?: Record<string, unknown>
  onClose?: () => Promise<void>
}

export class HttpClient extends BaseClient {
  readonly transport = 'http' as const
  // A browser's CORS: default calls carry no Trivium-Timeout-Ms and no Idempotency-Key (README "CORS").
  protected override readonly sendsOnlyWhenAsked = true
  protected readonly baseUrl: string
  protected readonly headers: Record<string, string>
  private readonly fetchFn: FetchLike
  private readonly extraInit: Record<string, unknown>
  private readonly onCloseHook: (() => Promise<void>) | undefined
  /** Smallest request body sent gzip-compressed; undefined: never. */
  private readonly compressFrom: number | undefined
  private closed = false
  private readonly active = new Set<AbortController>()

  constructor(options: HttpClientOptions, internals: HttpInternals = {}) {
    super(options)
    if (typeof options.url !== 'string' || !/^https?:\/\//i.test(options.url)) {
      throw optionError('url must be an http:// or https:// URL')
    }
    this.baseUrl = options.url.replace(/\/+$/, '')
    this.headers = { ...(options.headers ?? {}) }
    const compress = options.compressRequests ?? false
    if (compress === true) this.compressFrom = DEFAULT_COMPRESSION_THRESHOLD
    else if (typeof compress === 'object' && compress !== null) {
      const threshold = compress.threshold ?? DEFAULT_COMPRESSION_THRESHOLD
      if (!Number.isInteger(threshold) || threshold < 0)
        throw optionError('compressRequests.threshold must be an integer of at least 0 (bytes)')
      this.compressFrom = threshold
    } else if (compress !== false) throw optionError('compressRequests must be true, false or { threshold }')
    if (this.compressFrom !== undefined && typeof CompressionStream !== 'function')
      throw optionError('compressRequests needs CompressionStream (Node >= 18, current browsers)')
    const f = options.fetch ?? (globalThis.fetch as unknown as FetchLike | undefined)
    if (typeof f !== 'function') throw optionError('no fetch available: pass the fetch option')
    // Browsers refuse `fetch` called as a method of another object ("Illegal invocation"): bind it.
    this.fetchFn = options.fetch ? f : f.bind(globalThis)
    this.extraInit = { ...(internals.init ?? {}) }
    if (options.credentials) this.extraInit.credentials = options.credentials
    this.onCloseHook = internals.onClose
    this.setState('connected')
  }

  async connect(): Promise<void> {
    if (this.closed) throw new NetworkException(CLIENT_CLOSED_MESSAGE)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const c of this.active) c.abort(new NetworkException(CLIENT_CLOSED_MESSAGE))
    this.active.clear()
    this.setState('closed')
    await this.onCloseHook?.()
  }

  onPush(): Promise<() => Promise<void>> {
    return Promise.reject(
      new TriviumError(
        'Server push is not available over HTTP: use the websocket or tcp transport',
        'TRV_CLIENT_USAGE',
        400,
        'ClientUsageError',
      ),
    )
  }

  protected useBinary(model: ClientModel, direction: 'encode' | 'decode'): boolean {
    if (this.format === 'json') return false
    return typeof model[direction] === 'function'
  }

  private async buildRequest(
    spec: EndpointSpec,
    request: unknown,
    accept: string,
    idempotencyKey?: string,
    deadlineAt?: number,
  ): Promise<{ url: string; init: RequestInit & Record<string, unknown> }> {
    const json = request === undefined ? {} : spec.request.toJSON(request)
    const parts = toHttp(spec.method, spec.url, json)
    const headers: Record<string, string> = { ...this.headers, accept }
    const token = await this.currentToken()
    if (token) headers.authorization = `Bearer ${token}`
    const traceparent = this.currentTraceparent()
    if (traceparent) headers.traceparent = traceparent
    if (idempotencyKey !== undefined) headers[IDEMPOTENCY_KEY_HEADER] = idempotencyKey
    const timeout = timeoutToSend(deadlineAt)
    if (timeout !== undefined) headers[TIMEOUT_HEADER_LOWER] = timeout
    let body: RequestInit['body']
    if (parts.body !== undefined) {
      if (this.useBinary(spec.request, 'encode') && request !== undefined) {
        headers['content-type'] = BINARY_CONTENT_TYPE
        body = (spec.request.encode as (v: unknown) => Uint8Array)(request) as unknown as RequestInit['body']
      } else {
        headers['content-type'] = JSON_CONTENT_TYPE
        body = JSON.stringify(parts.body)
      }
      const from = this.compressFrom
      if (from !== undefined) {
        const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : (body as Uint8Array)
        if (bytes.length >= from) {
          headers['content-encoding'] = 'gzip'
          body = (await gzip(bytes)) as unknown as RequestInit['body']
        }
      }
    }
    return { url: this.baseUrl + parts.url, init: { ...this.extraInit, method: spec.method, headers, body } }
  }

  private async send(
    url: string,
    init: RequestInit & Record<string, unknown>,
    controller: AbortController,
  ): Promise<Response> {
    if (this.closed) throw new NetworkException(CLIENT_CLOSED_MESSAGE)
    try {
      return await this.fetchFn(url, { ...init, signal: controller.signal })
    } catch (err) {
      if (controller.signal.aborted) throw controller.signal.reason
      throw networkError(err)
    }
  }

  protected async doCall(
    spec: EndpointSpec,
    request: unknown,
    signal: AbortSignal,
    idempotencyKey: string | undefined,
    deadlineAt: number | undefined,
  ): Promise<unknown> {
    const accept = this.useBinary(spec.response, 'decode')
      ? `${BINARY_CONTENT_TYPE}, ${JSON_CONTENT_TYPE}`
      : JSON_CONTENT_TYPE
    const { url, init } = await this.buildRequest(spec, request, accept, idempotencyKey, deadlineAt)
    const controller = linkedController(signal)
    this.active.add(controller)
    try {
      const res = await this.send(url, init, controller)
      let bytes: Uint8Array
      try {
        bytes = new Uint8Array(await res.arrayBuffer())
      } catch (err) {
        if (controller.signal.aborted) throw controller.signal.reason
        throw networkError(err)
      }
      if (!res.ok) throw errorFromResponse(res, bytes)
      return decodeResponse(spec, res.headers.get('content-type'), bytes)
    } finally {
      this.active.delete(controller)
    }
  }

  /** HTTP/1.1 cannot carry a stream of requests (PROTOCOL.md "Client and bidirectional streams"). */
  protected openRequestStream(
    spec: EndpointSpec,
    _bidi: boolean,
    _signal: AbortSignal | undefined,
  ): ClientStreamCall<unknown, unknown> | BidiStreamCall<unknown, unknown> {
    throw usageError(`Endpoint ${spec.name} takes a stream of requests: call it over WebSocket or TCP`)
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
    while (true) {
      const controller = linkedController(signal)
      this.active.add(controller)
      try {
        const { url, init } = await this.buildRequest(
          spec,
          current,
          'text/event-stream',
          undefined,
          deadlineAt,
        )
        const res = await this.send(url, init, controller)
        if (!res.ok) {
          let bytes: Uint8Array
          try {
            bytes = new Uint8Array(await res.arrayBuffer())
          } catch (err) {
            throw networkError(err)
          }
          throw errorFromResponse(res, bytes)
        }
        if (!res.body) throw new NetworkException(`Stream ${spec.name}: the response has no body`)
        let interrupted: unknown
        try {
          for await (const ev of readEventStream(res.body)) {
            if (ev.event === 'item') {
              const item = decodeJsonItem(spec, ev.data)
              lastItem = item
              seen = true
              yield item
            } else if (ev.event === 'end') {
              return
            } else if (ev.event === 'error') {
              throw fromErrorBody(parseJson(ev.data, spec) as Partial<ErrorBody>)
            }
          }
        } catch (err) {
          if (err instanceof TriviumError) throw err
          if (controller.signal.aborted) throw controller.signal.reason
          interrupted = err
        }
        // The body ended (or broke) without an `end` event: the connection was lost.
        if (controller.signal.aborted) throw controller.signal.reason
        if (!spec.resume || this.closed) {
          throw new NetworkException(`Stream ${spec.name} interrupted: connection lost`, {
            cause: interrupted,
          })
        }
        if (seen) current = spec.resume(request, lastItem)
      } finally {
        // Reached on break/return too: aborting the fetch closes the connection, which stops the
        // handler on the server.
        controller.abort(new NetworkException('Stream closed'))
        this.active.delete(controller)
      }
    }
  }
}

function linkedController(signal: AbortSignal | undefined): AbortController {
  const controller = new AbortController()
  if (signal) {
    if (signal.aborted) controller.abort(signal.reason)
    else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true })
  }
  return controller
}

export function networkError(err: unknown): NetworkException {
  if (err instanceof NetworkException) return err
  const cause = (err as { cause?: { message?: string; code?: string } })?.cause
  const detail = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err)
  return new NetworkException(`Network error: ${detail}`, { cause: err })
}

function parseJson(text: string, spec: EndpointSpec): unknown {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new NetworkException(`Bad response from ${spec.name}: not valid JSON`, { cause: err })
  }
  // The model's reader recurses with the data (a recursive model): bounded as the server bounds requests.
  if (nestsDeeperThan(json))
    throw new NetworkException(`Bad response from ${spec.name}: nested deeper than ${MAX_JSON_DEPTH} levels`)
  return json
}

export function decodeJsonItem(spec: EndpointSpec, text: string): unknown {
  const json = parseJson(text, spec)
  try {
    return spec.response.fromJSON(json)
  } catch (err) {
    throw new NetworkException(`Bad response from ${spec.name}: ${(err as Error).message}`, { cause: err })
  }
}

export function decodeResponse(spec: EndpointSpec, contentType: string | null, bytes: Uint8Array): unknown {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase()
  if (type === BINARY_CONTENT_TYPE) {
    if (!spec.response.decode)
      throw new NetworkException(`Bad response from ${spec.name}: unexpected binary body`)
    try {
      return spec.response.decode(bytes)
    } catch (err) {
      throw new NetworkException(`Bad response from ${spec.name}: ${(err as Error).message}`, { cause: err })
    }
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch (err) {
    throw new NetworkException(`Bad response from ${spec.name}: invalid UTF-8`, { cause: err })
  }
  if (text.length === 0) return spec.response.fromJSON(undefined)
  return decodeJsonItem(spec, text)
}

/** The typed error of a non-2xx response: the Trivium error body, or one derived from the status. */
export function errorFromResponse(
  res: Pick<Response, 'status' | 'statusText' | 'headers'>,
  bytes: Uint8Array,
): TriviumError {
  let body: Partial<ErrorBody> | undefined
  try {
    const parsed = JSON.parse(new TextDecoder().decode(bytes))
    if (parsed && typeof parsed === 'object' && typeof parsed.code === 'string') body = parsed
  } catch {
    // not a Trivium body (e.g. a proxy's HTML page)
  }
  if (body) return fromErrorBody(body)
  const text = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
  switch (res.status) {
    case 401:
      return new UnauthorizedException(text)
    case 403:
      return new ForbiddenException(text)
    case 404:
      return new NotFoundException(text)
    case 429:
      return new RateLimitExceededException(Number(res.headers.get('retry-after') ?? 0), text)
    case 502:
    case 503:
    case 504:
      return new ServiceUnavailableException(text)
    default:
      return res.status >= 500
        ? new InternalErrorException(text)
        : new TriviumError(text, 'TRV_HTTP', res.status, 'HttpException')
  }
}

/** gzip with the platform's CompressionStream (browsers and Node alike). */
async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream('gzip'))
  return new Uint8Array(await new Response(stream).arrayBuffer())
}
