// The one table: endpoint name → HTTP route → handler → models. Transports look endpoints up here
// and never keep a copy of it.
import { MAX_TIMEOUT_MS } from '@trivium/wire'
import type { TriviumCall } from './call.js'
import { HttpMapping } from './http-mapping.js'
import { anyModel, type Model } from './model.js'
import { resolveModel } from './models/resolve.js'
import type { ModelSource } from './models/schema-types.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'
export const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE']

/**
 * Per-endpoint settings that other Trivium packages add by declaration merging, e.g.
 * `declare module '@trivium/core' { interface TriviumEndpointConfig { permissions?: string[] } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: extended by declaration merging
export interface TriviumEndpointConfig {}

export interface EndpointOptions<Req = unknown, Res = unknown> extends TriviumEndpointConfig {
  method: HttpMethod
  /** Fastify route path, e.g. `/tasks/:id`. */
  url: string
  request?: Model<Req>
  response?: Model<Res>
  /** HTTP status of a success (default 200; use 201 for a create). */
  status?: number
  /**
   * Deadline of every call in ms (1 … MAX_TIMEOUT_MS), or the client's timeout when that is earlier
   * (PROTOCOL.md "Deadlines"): when it passes `call.signal` aborts and the call is answered
   * TimeoutException (504); a stream ends with it.
   */
  timeoutMs?: number
  /** One-line description for docs and OpenAPI. */
  summary?: string
  /** Largest HTTP request body for this endpoint in bytes (default: the plugin's `bodyLimit`). */
  bodyLimit?: number
  /** Accepts an idempotency key (`Idempotency-Key` header, `idempotency_key` metadata): see `idempotency()`. */
  idempotencyKey?: boolean
}

/**
 * Endpoint options whose `request` / `response` are schemas as people write them: a Model, a
 * Standard Schema (Zod 4, Valibot, ArkType), a TypeBox schema or a JSON Schema (see `resolveModel`).
 */
export interface SchemaEndpointOptions<
  Q extends ModelSource = Model<unknown>,
  R extends ModelSource = Model<unknown>,
> extends Omit<EndpointOptions, 'request' | 'response'> {
  request?: Q
  response?: R
}

export type UnaryHandler<Req = unknown, Res = unknown> = (
  request: Req,
  call: TriviumCall<Req>,
) => Res | Promise<Res>
export type StreamHandler<Req = unknown, Item = unknown> = (
  request: Req,
  call: TriviumCall<Req>,
) => AsyncIterable<Item>
/** A client stream's handler: the request items as they arrive, answered by one response. */
export type ClientStreamHandler<Req = unknown, Res = unknown> = (
  requests: AsyncIterable<Req>,
  call: TriviumCall<Req>,
) => Res | Promise<Res>
/** A bidirectional stream's handler: the request items as they arrive, answered by a stream of items. */
export type BidiStreamHandler<Req = unknown, Item = unknown> = (
  requests: AsyncIterable<Req>,
  call: TriviumCall<Req>,
) => AsyncIterable<Item>

interface DefinitionBase<Req, Res> {
  readonly kind: 'endpoint'
  readonly name: string
  readonly method: HttpMethod
  readonly url: string
  readonly request: Model<Req>
  readonly response: Model<Res>
  readonly status: number
  readonly timeoutMs: number | undefined
  /** The endpoint's options as registered, including settings other packages declared. */
  readonly config: EndpointOptions<Req, Res>
  readonly http: HttpMapping
}

export interface UnaryDefinition<Req = unknown, Res = unknown> extends DefinitionBase<Req, Res> {
  readonly streaming: false
  readonly requestStream: false
  readonly handler: UnaryHandler<Req, Res>
}

export interface StreamDefinition<Req = unknown, Item = unknown> extends DefinitionBase<Req, Item> {
  readonly streaming: true
  readonly requestStream: false
  readonly handler: StreamHandler<Req, Item>
}

/** Takes a stream of requests (WebSocket and TCP only), answers one response. */
export interface ClientStreamDefinition<Req = unknown, Res = unknown> extends DefinitionBase<Req, Res> {
  readonly streaming: false
  readonly requestStream: true
  readonly handler: ClientStreamHandler<Req, Res>
}

/** Takes a stream of requests and answers a stream of items (WebSocket and TCP only). */
export interface BidiStreamDefinition<Req = unknown, Item = unknown> extends DefinitionBase<Req, Item> {
  readonly streaming: true
  readonly requestStream: true
  readonly handler: BidiStreamHandler<Req, Item>
}

export type EndpointDefinition<Req = unknown, Res = unknown> =
  | UnaryDefinition<Req, Res>
  | StreamDefinition<Req, Res>
  | ClientStreamDefinition<Req, Res>
  | BidiStreamDefinition<Req, Res>

/** What a registration declares: a stream of responses (`streaming`), a stream of requests (`requestStream`). */
export interface EndpointShape {
  streaming: boolean
  requestStream: boolean
}

/**
 * A plain Fastify route that a route guard (@trivium/auth's `config.triviumRoute`) runs through the
 * middleware chain: the target of a call that is not an endpoint's. It has no models, status or handler:
 * its `next()` lets the route go on and resolves once Fastify has sent the route's response, with a
 * RouteOutcome.
 */
export interface GuardedRoute {
  readonly kind: 'route'
  /** `config.triviumRoute.name`, by default `<METHOD> <url>` (e.g. `GET /legacy`). */
  readonly name: string
  readonly method: string
  readonly url: string
  /** The route's `config.triviumRoute`: the settings of the registered plugins, as on an endpoint. */
  readonly config: TriviumEndpointConfig
  readonly timeoutMs: undefined
  readonly streaming: false
}

/**
 * What a call runs: an endpoint, or a guarded plain route. Middleware sees both (`definition.kind`).
 * `any` because a handler's request type is contravariant: no other type holds every typed endpoint.
 */
export type CallTarget = EndpointDefinition<any, any> | GuardedRoute

/** True for a call to an endpoint (models, status, handler); false for a guarded plain route's. */
export function isEndpointCall<Req>(
  call: TriviumCall<Req, CallTarget>,
): call is TriviumCall<Req, EndpointDefinition<Req>> {
  return call.definition.kind === 'endpoint'
}

/** What `next()` resolves to on a guarded plain route: the response Fastify sent for it. */
export interface RouteOutcome {
  readonly statusCode: number
}

/** Endpoint names: dot-separated segments of letters, digits, `_` and `-`, each starting with a letter. */
export const ENDPOINT_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$/
export const MAX_ENDPOINT_NAME_BYTES = 255
/** The longest `timeoutMs` (and client timeout): the largest delay a Node timer takes (2^31 - 1 ms, ~24.8 days). */
export { MAX_TIMEOUT_MS }

/** The refusal of a client or bidirectional stream over HTTP (the HTTP client says the same). */
export function requestStreamOverHttpMessage(name: string): string {
  return `Endpoint ${name} takes a stream of requests: call it over WebSocket or TCP`
}

export class RegistrationError extends Error {
  readonly code = 'TRV_REGISTRATION'
  constructor(message: string) {
    super(`@trivium/core: ${message}`)
    this.name = 'RegistrationError'
  }
}

/** An endpoint's `request` or `response` as a Model; a source that cannot be one is a RegistrationError. */
function modelOf<T>(name: string, side: 'request' | 'response', source: unknown): Model<T> | undefined {
  try {
    return resolveModel(source, `${name} ${side}`) as Model<T> | undefined
  } catch (err) {
    throw new RegistrationError(`endpoint "${name}": ${side} ${(err as Error).message}`)
  }
}

/** An endpoint name: the pattern and the byte limit. */
function checkName(name: string): void {
  if (typeof name !== 'string' || !ENDPOINT_NAME_PATTERN.test(name)) {
    throw new RegistrationError(
      `invalid endpoint name ${JSON.stringify(name)}: use dot-separated segments of letters, digits, "_" and "-", each starting with a letter`,
    )
  }
  if (Buffer.byteLength(name) > MAX_ENDPOINT_NAME_BYTES) {
    throw new RegistrationError(`endpoint name "${name}" is longer than ${MAX_ENDPOINT_NAME_BYTES} bytes`)
  }
}

/** The options' method and URL, the handler, and the methods a kind of endpoint may use. */
function checkRoute<Req, Res>(
  name: string,
  options: EndpointOptions<Req, Res>,
  handler: unknown,
  streaming: boolean,
  requestStream: boolean,
): void {
  if (typeof options !== 'object' || options === null) {
    throw new RegistrationError(`endpoint "${name}" needs options with method and url`)
  }
  if (!HTTP_METHODS.includes(options.method)) {
    throw new RegistrationError(
      `endpoint "${name}": method must be one of ${HTTP_METHODS.join(', ')}, got ${String(options.method)}`,
    )
  }
  if (typeof options.url !== 'string' || !options.url.startsWith('/')) {
    throw new RegistrationError(`endpoint "${name}": url must be a path starting with "/"`)
  }
  if (typeof handler !== 'function')
    throw new RegistrationError(`endpoint "${name}": handler must be a function`)
  if (requestStream && options.method !== 'POST') {
    throw new RegistrationError(`endpoint "${name}" takes a stream of requests and must use POST`)
  }
  if (streaming && options.method !== 'GET' && options.method !== 'POST') {
    throw new RegistrationError(`streaming endpoint "${name}" must use GET or POST`)
  }
}

/** The options' status, timeout and body limit; returns the status. */
function checkLimits<Req, Res>(name: string, options: EndpointOptions<Req, Res>): number {
  const status = options.status ?? 200
  if (!Number.isInteger(status) || status < 200 || status > 299) {
    throw new RegistrationError(`endpoint "${name}": status must be a 2xx code`)
  }
  const timeoutMs = options.timeoutMs
  if (
    timeoutMs !== undefined &&
    (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS)
  ) {
    throw new RegistrationError(
      `endpoint "${name}": timeoutMs must be a positive integer number of milliseconds (at most ${MAX_TIMEOUT_MS}), got ${String(timeoutMs)}`,
    )
  }
  if (options.bodyLimit !== undefined && (!Number.isInteger(options.bodyLimit) || options.bodyLimit <= 0)) {
    throw new RegistrationError(`endpoint "${name}": bodyLimit must be a positive integer (bytes)`)
  }
  return status
}

export class EndpointRegistry {
  // `any`: every endpoint, whatever its types (see CallTarget)
  private readonly byName = new Map<string, EndpointDefinition<any, any>>()
  private readonly byRoute = new Map<string, string>()
  private sealed = false

  /** Validates and stores a definition. Throws RegistrationError on a bad or duplicate name/route. */
  add<Req, Res>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: UnaryHandler<Req, Res>,
    shape: false | { streaming: false; requestStream: false },
  ): UnaryDefinition<Req, Res>
  add<Req, Res>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: StreamHandler<Req, Res>,
    shape: true | { streaming: true; requestStream: false },
  ): StreamDefinition<Req, Res>
  add<Req, Res>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: ClientStreamHandler<Req, Res>,
    shape: { streaming: false; requestStream: true },
  ): ClientStreamDefinition<Req, Res>
  add<Req, Res>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: BidiStreamHandler<Req, Res>,
    shape: { streaming: true; requestStream: true },
  ): BidiStreamDefinition<Req, Res>
  add<Req, Res>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler:
      | UnaryHandler<Req, Res>
      | StreamHandler<Req, Res>
      | ClientStreamHandler<Req, Res>
      | BidiStreamHandler<Req, Res>,
    shape: EndpointShape | boolean,
  ): EndpointDefinition<Req, Res> {
    const { streaming, requestStream } =
      typeof shape === 'boolean' ? { streaming: shape, requestStream: false } : shape
    if (this.sealed) throw new RegistrationError(`cannot register "${name}" after the server has started`)
    checkName(name)
    if (this.byName.has(name)) throw new RegistrationError(`endpoint "${name}" is already registered`)
    checkRoute(name, options, handler, streaming, requestStream)
    const routeKey = `${options.method} ${HttpMapping.normalizePath(options.url)}`
    const clash = this.byRoute.get(routeKey)
    if (clash) {
      throw new RegistrationError(
        `endpoint "${name}": route ${options.method} ${options.url} is already used by "${clash}"`,
      )
    }
    const status = checkLimits(name, options)
    // Without a model the body is any JSON value: the endpoint's own types are what its author declared.
    const request: Model<Req> = modelOf(name, 'request', options.request) ?? (anyModel as Model<Req>)
    const response: Model<Res> = modelOf(name, 'response', options.response) ?? (anyModel as Model<Res>)
    const definition = {
      kind: 'endpoint',
      name,
      method: options.method,
      url: options.url,
      request,
      response,
      status,
      timeoutMs: options.timeoutMs,
      config: options,
      http: new HttpMapping(options.method, options.url, request),
      streaming,
      requestStream,
      handler,
    } as EndpointDefinition<Req, Res>
    this.byName.set(name, definition)
    this.byRoute.set(routeKey, name)
    return definition
  }

  get(name: string): EndpointDefinition | undefined {
    return this.byName.get(name)
  }

  has(name: string): boolean {
    return this.byName.has(name)
  }

  list(): EndpointDefinition[] {
    return [...this.byName.values()]
  }

  seal(): void {
    this.sealed = true
  }
}
