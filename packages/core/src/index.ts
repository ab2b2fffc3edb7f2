// @trivium/core — the Fastify plugin. Validates options, creates the registry and pipeline, decorates
// `fastify.trivium`, and serves every endpoint over HTTP. Other transports use `trivium.invoke`.

import type { Contract } from '@trivium/contract'

import { optionNames, refuseUnknownOptions } from '@trivium/wire'
import type { SessionHub } from '@trivium/wire/sessions'
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { type ContractHandlers, type ContractSettings, implementContract } from './contract.js'
import { checkSettings, EndpointSettingsError } from './endpoint-settings.js'
import { INTERNAL_ERROR_MESSAGE, InternalErrorException } from './errors.js'
import { FormatRegistry, type WireFormat } from './formats.js'
import {
  type HttpCompressionOptions,
  type ResolvedHttpCompression,
  resolveHttpCompression,
} from './http/compression.js'
import { HttpDrain } from './http/drain.js'
import { replyWithError } from './http/error-reply.js'
import { type ErrorHeaders, frameworkErrorHandler } from './http/framework-errors.js'
import { Http2Sessions } from './http/http2.js'
import { registerHttpRoute } from './http/route.js'
import { EventStreams } from './http/sse.js'
import { installNotFoundHandler, installRootErrorHandler } from './http/whole-app.js'
import { type InvokeInit, type InvokeResult, Invoker, type StartedCall } from './invoke.js'
import { type Middleware, type MiddlewareOptions, Pipeline } from './middleware.js'
import type { Model } from './model.js'
import type { ModelSource, SchemaInput, SchemaOutput } from './models/schema-types.js'
import { addNamedRoute, isNamedRoute } from './named-route.js'
import {
  type BidiStreamDefinition,
  type BidiStreamHandler,
  type ClientStreamDefinition,
  type ClientStreamHandler,
  type EndpointDefinition,
  type EndpointOptions,
  EndpointRegistry,
  type GuardedRoute,
  type SchemaEndpointOptions,
  type StreamDefinition,
  type StreamHandler,
  type UnaryDefinition,
  type UnaryHandler,
} from './registry.js'
import type { EarlyRouteGuard } from './route-guard.js'
import { resolveShutdownGrace } from './shutdown-grace.js'

// The error classes, as @trivium/wire keeps them (one list for every package's entry).
export * from '@trivium/wire/error-classes'
export { type Protocol, TriviumCall, type TriviumIdentity } from './call.js'
export { type FrameRejectReason, TRIVIUM_CHANNELS } from './channels.js'
export type {
  ContractEndpointSettings,
  ContractHandler,
  ContractHandlers,
  ContractSettings,
} from './contract.js'
// The public API: what a service needs to declare endpoints, middleware, models and errors. Building
// blocks of the sibling packages and tests are in `@trivium/core/internal` (src/internal.ts).
export {
  httpCredential,
  metadataCredential,
  websocketCredential,
} from './credential.js'
export { EndpointSettingsError } from './endpoint-settings.js'
export { normalizeError } from './errors.js'
export type { WireFormat } from './formats.js'
export type { HttpCompressionOptions } from './http/compression.js'
export { type TriviumFactoryOptions, triviumFactoryOptions } from './http/framework-errors.js'
export { type Http2TlsSetting, type TriviumHttp2Options, triviumHttp2Options } from './http/http2.js'
export {
  IDEMPOTENCY_TABLE_SQL,
  type IdempotencyOptions,
  type IdempotencyRecord,
  type IdempotencyScope,
  type IdempotencySqlClient,
  type IdempotencyStore,
  idempotency,
  MemoryIdempotencyStore,
  SqlIdempotencyStore,
} from './idempotency.js'
export { redactingRequestSerializer } from './log-redaction.js'
export {
  directMiddleware,
  type Middleware,
  type MiddlewareOptions,
  MiddlewareOrderError,
  type Next,
} from './middleware.js'
export {
  anyModel,
  emptyModel,
  type JsonSchema,
  jsonSchemaModel,
  type Model,
  type ModelType,
} from './model.js'
export { type SchemaModelOptions, schemaModel } from './models/resolve.js'
export type { JsonSchemaSource, ModelSource, SchemaInput, SchemaOutput } from './models/schema-types.js'
export type { StandardSchemaV1 } from './models/standard-schema-spec.js'
export {
  type BidiStreamDefinition,
  type BidiStreamHandler,
  type CallTarget,
  type ClientStreamDefinition,
  type ClientStreamHandler,
  type EndpointDefinition,
  type EndpointOptions,
  type GuardedRoute,
  type HttpMethod,
  isEndpointCall,
  RegistrationError,
  type RouteOutcome,
  type SchemaEndpointOptions,
  type StreamDefinition,
  type StreamHandler,
  type TriviumEndpointConfig,
  type UnaryDefinition,
  type UnaryHandler,
} from './registry.js'

import { SETUP } from './setup-errors.js'

const UNARY = { streaming: false, requestStream: false } as const
const SERVER_STREAM = { streaming: true, requestStream: false } as const
const CLIENT_STREAM = { streaming: false, requestStream: true } as const
const BIDI_STREAM = { streaming: true, requestStream: true } as const

export interface TriviumCoreOptions {
  /**
   * Answer unknown routes with the Trivium error body (NotFoundException `Route GET /x not found`).
   * Default false: a guest leaves the application's 404 (Fastify's, or its own `setNotFoundHandler`) as
   * it was. An application that owns its whole app (the demo) sets true.
   */
  notFoundHandler?: boolean
  /**
   * Answer the errors of the whole application in the Trivium error body: the root error handler (the
   * errors of routes that are not endpoints, and of the not-found context) and the refusals Node and
   * Fastify answer before any route (a missing Host, an unsupported Expect, a request arriving while the
   * server closes). Default false: a guest leaves every route that is not its own to the application's
   * error handler (or Fastify's). Endpoints and routes with `config.triviumRoute` always answer in the
   * Trivium body. Refused at registration when the context already has an error handler of the
   * application's (`setErrorHandler`).
   */
  errorHandler?: boolean
  /**
   * How long `app.close()` waits for HTTP unary calls in flight before aborting them (`call.signal`)
   * and answering 503 `Server is shutting down` (default: 3 s, at most 30% of Fastify's
   * `pluginTimeout`; the same default as the frame transports' `shutdownGraceMs`).
   */
  shutdownGraceMs?: number
  /** Largest request body accepted on endpoint routes, in bytes (default 1 MiB). */
  bodyLimit?: number
  /**
   * Compress endpoint responses for clients whose Accept-Encoding accepts it (PROTOCOL.md
   * "Compression"): `true`, or `{ threshold, encodings }`. Default off. Compressed request bodies are
   * read whatever this says (the body limit applies to their inflated size).
   */
  compression?: boolean | HttpCompressionOptions
}

export interface Trivium {
  /** Registers a unary endpoint under `name`, served on every transport. */
  endpoint<Req = any, Res = any>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: UnaryHandler<Req, Res>,
  ): UnaryDefinition<Req, Res>
  /** The same with schemas as models (TypeBox, Standard Schema, JSON Schema): the handler is typed from them. */
  endpoint<Q extends ModelSource = Model<any>, R extends ModelSource = Model<any>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: UnaryHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): UnaryDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /** Registers a streaming endpoint: the handler is an async generator of response items. */
  stream<Req = any, Item = any>(
    name: string,
    options: EndpointOptions<Req, Item>,
    handler: StreamHandler<Req, Item>,
  ): StreamDefinition<Req, Item>
  stream<Q extends ModelSource = Model<any>, R extends ModelSource = Model<any>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: StreamHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): StreamDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /**
   * Registers a client stream (WebSocket and TCP): the handler takes the request items as they arrive
   * and answers one response. Over HTTP the route refuses every call (PROTOCOL.md "Client and
   * bidirectional streams"). POST only.
   */
  clientStream<Req = any, Res = any>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: ClientStreamHandler<Req, Res>,
  ): ClientStreamDefinition<Req, Res>
  clientStream<Q extends ModelSource = Model<any>, R extends ModelSource = Model<any>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: ClientStreamHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): ClientStreamDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /** Registers a bidirectional stream (WebSocket and TCP): request items in, response items out. POST only. */
  bidiStream<Req = any, Item = any>(
    name: string,
    options: EndpointOptions<Req, Item>,
    handler: BidiStreamHandler<Req, Item>,
  ): BidiStreamDefinition<Req, Item>
  bidiStream<Q extends ModelSource = Model<any>, R extends ModelSource = Model<any>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: BidiStreamHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): BidiStreamDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /**
   * Registers every endpoint of a contract (@trivium/contract's `defineContract`) with its handler, each
   * as `endpoint`/`stream`/`clientStream`/`bidiStream` would. `handlers` needs one handler per endpoint,
   * typed from the contract's schemas; `settings` adds what the contract leaves to the server (auth,
   * permissions, timeouts …) per endpoint.
   */
  implement<C extends Contract>(
    contract: C,
    handlers: ContractHandlers<C>,
    settings?: ContractSettings<C>,
  ): { [K in keyof C]: EndpointDefinition }
  /**
   * Adds a middleware at the end of the chain (the same chain on every transport). Called on a child
   * context (`child.trivium.use()`), it runs only for the endpoints of that context and its descendants.
   */
  use(middleware: Middleware, options?: MiddlewareOptions): void
  /** Adds a wire format (e.g. the binary format of @trivium/codec). */
  addFormat(format: WireFormat): void
  /** Runs a call from a frame-based transport through the pipeline to its handler. */
  invoke(init: InvokeInit): Promise<InvokeResult>
  /**
   * `invoke` without its promise: parses the call (throwing NotFoundException for an unknown endpoint)
   * and starts the pipeline; `result` is the handler's value or a promise of it. For transports that
   * count every microtask.
   */
  start(init: InvokeInit): StartedCall
  /**
   * Called by a route guard (@trivium/auth) for a plain route whose `config.triviumRoute` (`rules`) it
   * enforces by running the pipeline for `route`. At `ready()` a plain route with the option that no
   * guard claimed refuses to start.
   */
  guardRoute(rules: object, route: GuardedRoute): void
  /**
   * Set by a route guard (@trivium/auth): runs the guard for a request to a route added before
   * @trivium/core, which no onRoute hook saw (the app-wide fallback; see `guardRoute`).
   */
  setEarlyRouteGuard(guard: EarlyRouteGuard): void
  readonly registry: EndpointRegistry
  readonly formats: FormatRegistry
  readonly pipeline: Pipeline
  /** Largest request body, in bytes; frame transports apply the same limit. */
  readonly bodyLimit: number
  /**
   * Headers added to every HTTP error answered below the routes (Node's client errors, Fastify's router
   * errors, unknown routes), where route hooks do not run. `@trivium/protections` puts the security
   * headers here: `Object.assign(fastify.trivium.errorHeaders, headers)`.
   */
  readonly errorHeaders: ErrorHeaders
  /**
   * The session hub of the frame transports (`fastify.push`, set by the first one registered). HTTP
   * event streams register in it as well, so `closeSessions` (a revocation) ends them on every transport.
   */
  sessionHub: SessionHub | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    trivium: Trivium
  }
}

const DEFAULT_BODY_LIMIT = 1024 * 1024
/** How often a shutting-down server closes the keep-alive connections that have become idle. */
const IDLE_SWEEP_MS = 20

/** The URL an endpoint of a context with `prefix` answers on (Fastify's own joining rule). */
function withPrefix(prefix: string, url: string): string {
  if (!prefix) return url
  return url === '/' ? prefix : `${prefix}${url}`
}

const CORE_OPTIONS = optionNames<TriviumCoreOptions>()(
  'notFoundHandler',
  'errorHandler',
  'shutdownGraceMs',
  'bodyLimit',
  'compression',
)

function validateOptions(
  options: TriviumCoreOptions,
  pluginTimeout: number,
): Required<Omit<TriviumCoreOptions, 'compression'>> & { compression: ResolvedHttpCompression | undefined } {
  refuseUnknownOptions('@trivium/core', options, CORE_OPTIONS)
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  if (!Number.isInteger(bodyLimit) || bodyLimit <= 0) {
    throw SETUP.TRV_CORE_BODY_LIMIT()
  }
  // A guest's defaults: the application's own routes, errors and 404 stay as they were.
  const notFoundHandler = options.notFoundHandler ?? false
  if (typeof notFoundHandler !== 'boolean') throw SETUP.TRV_CORE_NOT_FOUND_HANDLER()
  const errorHandler = options.errorHandler ?? false
  if (typeof errorHandler !== 'boolean') throw SETUP.TRV_CORE_ERROR_HANDLER()
  return {
    bodyLimit,
    notFoundHandler,
    errorHandler,
    shutdownGraceMs: resolveShutdownGrace('@trivium/core', options.shutdownGraceMs, pluginTimeout),
    compression: resolveHttpCompression(options.compression),
  }
}

// PROTOCOL.md "Decoding rules": one JSON rule on every transport. HTTP bodies go through Fastify's
// parser, which follows the rule only with its default poisoning options.
function checkJsonRule(fastify: FastifyInstance): void {
  for (const key of ['onProtoPoisoning', 'onConstructorPoisoning'] as const) {
    const value = fastify.initialConfig[key]
    if (value !== undefined && value !== 'error') {
      throw SETUP.TRV_CORE_JSON_POISONING(key, value)
    }
  }
}

const triviumCore: FastifyPluginAsync<TriviumCoreOptions> = async (fastify: FastifyInstance, rawOptions) => {
  const options = validateOptions(rawOptions, fastify.initialConfig.pluginTimeout ?? 0)
  checkJsonRule(fastify)
  const registry = new EndpointRegistry()
  const pipeline = new Pipeline()
  const formats = new FormatRegistry()
  const invoker = new Invoker(registry, pipeline)
  const streams = new EventStreams()
  const drain = new HttpDrain(options.shutdownGraceMs)
  const http2Sessions = new Http2Sessions(fastify)
  const routeContext = {
    pipeline,
    formats,
    bodyLimit: options.bodyLimit,
    streams,
    compression: options.compression,
    drain,
  }
  const errorHeaders: ErrorHeaders = {}
  // Plain routes with `config.triviumRoute` seen after this plugin, and the guard's definition of each.
  const plainRoutes: { label: string; rules: unknown }[] = []
  const guarded = new Map<unknown, GuardedRoute>()
  // Routes added before this plugin cannot be seen by onRoute, and Fastify has no public listing of them
  // (printRoutes() draws a tree, not an API). So an app-wide preHandler reads each request's route config
  // (request.routeOptions, public) and guards (or refuses) those with the option that onRoute never saw.
  let earlyGuard: EarlyRouteGuard | undefined
  fastify.addHook('preHandler', (request, reply, done) => {
    const config = request.routeOptions.config
    const rules: unknown = 'triviumRoute' in config ? config.triviumRoute : undefined
    if (rules === undefined || guarded.has(rules)) return done()
    if (typeof rules === 'object' && rules !== null && earlyGuard !== undefined) {
      return earlyGuard(rules, request, reply, done)
    }
    // Fail closed: a server fault (its rule cannot be enforced), named in the log, not to the client.
    request.log.error(
      { route: request.routeOptions.url },
      '@trivium/core: a route added before @trivium/core has config.triviumRoute but no route guard runs: register @trivium/auth',
    )
    reply.headers(errorHeaders)
    replyWithError(new InternalErrorException(INTERNAL_ERROR_MESSAGE), request, reply)
  })
  // Opted-in routes answer their errors in the Trivium body, with an error handler of their own (a
  // route's own `errorHandler` is kept); every other route keeps its context's (the application's).
  const routeErrorHandler = frameworkErrorHandler(errorHeaders)
  fastify.addHook('onRoute', function seeRoute(this: FastifyInstance, route) {
    // The option's type is declared by @trivium/auth; core only needs to see that it is there.
    const config = route.config
    const rules: unknown = config !== undefined && 'triviumRoute' in config ? config.triviumRoute : undefined
    if (rules === undefined) return
    const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
    plainRoutes.push({ label: `route ${method} ${route.url}`, rules })
    route.errorHandler ??= routeErrorHandler
    // A name makes the route an endpoint too (named-route.ts). Fastify's own HEAD twin of a GET route
    // carries the same config: the GET route is the endpoint.
    const name = typeof rules === 'object' && rules !== null && 'name' in rules ? rules.name : undefined
    if (typeof name === 'string' && method !== 'HEAD') {
      pipeline.setContext(addNamedRoute(registry, route, name, rules as object), this)
    }
  })

  function addBodyParser(format: WireFormat): void {
    if (format.contentType === 'application/json') return // Fastify's own (secure) JSON parser
    fastify.addContentTypeParser(
      format.contentType,
      { parseAs: 'buffer', bodyLimit: options.bodyLimit },
      (_req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) =>
        done(null, body),
    )
  }

  // One registry (names are one namespace on every transport), but routes belong to the context that
  // registers them: `child.trivium.endpoint()` gets the child's prefix, hooks and decorators over HTTP.
  function register<D extends EndpointDefinition>(
    instance: FastifyInstance,
    endpointOptions: EndpointOptions,
    add: (options: EndpointOptions) => D,
  ): D {
    const url = endpointOptions?.url
    const definition = add({
      ...endpointOptions,
      url: typeof url === 'string' ? withPrefix(instance.prefix, url) : url,
    })
    pipeline.setContext(definition, instance)
    formats.deriveForms([definition.request, definition.response])
    registerHttpRoute(instance, definition, routeContext, url)
    return definition
  }
  const unary = (instance: FastifyInstance, name: string, o: EndpointOptions, h: UnaryHandler<any, any>) =>
    register(instance, o, (options) => registry.add(name, options, h, UNARY))
  const stream = (instance: FastifyInstance, name: string, o: EndpointOptions, h: StreamHandler<any, any>) =>
    register(instance, o, (options) => registry.add(name, options, h, SERVER_STREAM))
  const clientStream = (
    instance: FastifyInstance,
    name: string,
    o: EndpointOptions,
    h: ClientStreamHandler<any, any>,
  ) => register(instance, o, (options) => registry.add(name, options, h, CLIENT_STREAM))
  const bidiStream = (
    instance: FastifyInstance,
    name: string,
    o: EndpointOptions,
    h: BidiStreamHandler<any, any>,
  ) => register(instance, o, (options) => registry.add(name, options, h, BIDI_STREAM))

  const trivium: Trivium = {
    endpoint(name: string, endpointOptions: EndpointOptions, handler: UnaryHandler<any, any>): any {
      return unary(fastify, name, endpointOptions, handler)
    },
    stream(name: string, endpointOptions: EndpointOptions, handler: StreamHandler<any, any>): any {
      return stream(fastify, name, endpointOptions, handler)
    },
    clientStream(
      name: string,
      endpointOptions: EndpointOptions,
      handler: ClientStreamHandler<any, any>,
    ): any {
      return clientStream(fastify, name, endpointOptions, handler)
    },
    bidiStream(name: string, endpointOptions: EndpointOptions, handler: BidiStreamHandler<any, any>): any {
      return bidiStream(fastify, name, endpointOptions, handler)
    },
    // `this`: the context it is called on (a child's view registers in the child).
    implement(contract, handlers, settings) {
      return implementContract(this, contract, handlers, settings)
    },
    use(middleware, middlewareOptions) {
      pipeline.use(middleware, middlewareOptions)
    },
    addFormat(format) {
      formats.add(format)
      formats.deriveForms(registry.list().flatMap((d) => [d.request, d.response]))
      addBodyParser(format)
    },
    invoke(init) {
      return invoker.invoke(init)
    },
    start(init) {
      return invoker.start(init)
    },
    guardRoute(rules, definition) {
      guarded.set(rules, definition)
    },
    setEarlyRouteGuard(guard) {
      earlyGuard = guard
    },
    registry,
    formats,
    pipeline,
    bodyLimit: options.bodyLimit,
    errorHeaders,
    get sessionHub() {
      return streams.hub
    },
    set sessionHub(hub) {
      streams.hub = hub
    },
  }
  const scoped = new WeakMap<FastifyInstance, Trivium>()
  function triviumOf(instance: FastifyInstance): Trivium {
    if (instance === fastify) return trivium
    let view = scoped.get(instance)
    if (!view) {
      view = Object.create(trivium, {
        use: {
          value: (middleware: Middleware, o?: MiddlewareOptions) => pipeline.use(middleware, o, instance),
        },
        endpoint: {
          value: (name: string, o: EndpointOptions, h: UnaryHandler<any, any>) => unary(instance, name, o, h),
        },
        stream: {
          value: (name: string, o: EndpointOptions, h: StreamHandler<any, any>) =>
            stream(instance, name, o, h),
        },
        clientStream: {
          value: (name: string, o: EndpointOptions, h: ClientStreamHandler<any, any>) =>
            clientStream(instance, name, o, h),
        },
        bidiStream: {
          value: (name: string, o: EndpointOptions, h: BidiStreamHandler<any, any>) =>
            bidiStream(instance, name, o, h),
        },
        // Routes added before @trivium/core belong to no child context: a guard registered in one (a
        // child's @trivium/auth) does not run for them; they stay refused unless core's context has one.
        setEarlyRouteGuard: { value: () => {} },
      }) as Trivium
      scoped.set(instance, view)
    }
    return view
  }
  fastify.decorate('trivium', {
    getter(this: FastifyInstance) {
      return triviumOf(this)
    },
  })
  if (options.errorHandler) installRootErrorHandler(fastify, errorHeaders)
  if (options.notFoundHandler) installNotFoundHandler(fastify, errorHeaders)

  fastify.addHook('onReady', async () => {
    pipeline.checkOrder()
    checkRules()
    registry.seal()
  })

  /** Every rule declared on an endpoint or plain route is enforced where it is declared (see endpoint-settings). */
  function checkRules(): void {
    const anywhere = pipeline.enforcedAnywhere()
    for (const definition of registry.list()) {
      if (isNamedRoute(definition)) continue // its rules are the route's, checked below
      const target = { label: `endpoint "${definition.name}"`, settings: definition.config }
      checkSettings(target, pipeline.enforcedFor(definition), anywhere)
    }
    for (const { label, rules } of plainRoutes) {
      const definition = guarded.get(rules)
      if (definition === undefined) {
        throw new EndpointSettingsError(
          `${label} has config.triviumRoute, but no route guard enforces it: register @trivium/auth before the route (in its context or an ancestor)`,
        )
      }
      const target = { label, settings: definition.config, ownKeys: ['name'], defaults: { auth: 'required' } }
      checkSettings(target, pipeline.enforcedFor(definition), anywhere)
    }
  }
  // Shutdown (PROTOCOL.md "HTTP streaming"): event streams end with the 503 error event, unary calls
  // still running after the grace are aborted and answered 503 (http/drain.ts), and each
  // keep-alive connection is closed once it is idle (Node's server.close() closes only those idle at
  // that moment, so one finishing a call later, or an ended stream's, would hold app.close() forever).
  fastify.addHook('preClose', (done) => {
    streams.shutdown()
    drain.shutdown()
    http2Sessions.shutdown()
    const server = fastify.server
    // An h2c server has no HTTP/1 connections (nor the method); an h2 one with allowHTTP1 has both.
    if (server.listening && typeof server.closeIdleConnections === 'function') {
      const timer = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
      timer.unref()
      server.once('close', () => clearInterval(timer))
    }
    done()
  })
}

export const triviumCorePlugin = fp(triviumCore, { fastify: '^5.12.1', name: '@trivium/core' })
export default triviumCorePlugin
