// `fastify.trivium`: its type, and the decorator that builds it for the plugin (index.ts) with a view
// per child context, so that `child.trivium.endpoint()` registers in the child.
import type { Contract } from '@trivium/contract'
import type { SessionHub } from '@trivium/wire/sessions'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type ContractHandlers, type ContractSettings, implementContract } from './contract.js'
import type { FormatRegistry, WireFormat } from './formats.js'
import type { ErrorHeaders } from './http/framework-errors.js'
import { type HttpRouteContext, registerHttpRoute } from './http/route.js'
import type { EventStreams } from './http/sse.js'
import { type InvokeInit, type InvokeResult, Invoker, type StartedCall } from './invoke.js'
import type { Middleware, MiddlewareOptions, Pipeline } from './middleware.js'
import type { Model } from './model.js'
import type { ModelSource, SchemaInput, SchemaOutput } from './models/schema-types.js'
import type {
  BidiStreamDefinition,
  BidiStreamHandler,
  ClientStreamDefinition,
  ClientStreamHandler,
  EndpointDefinition,
  EndpointOptions,
  EndpointRegistry,
  GuardedRoute,
  SchemaEndpointOptions,
  StreamDefinition,
  StreamHandler,
  UnaryDefinition,
  UnaryHandler,
} from './registry.js'
import type { EarlyRouteGuard } from './route-guard/guard.js'
import type { PlainRoutes } from './route-guard/plain-routes.js'

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

/** What the plugin built, handed to the decorator. */
export interface TriviumParts {
  registry: EndpointRegistry
  pipeline: Pipeline
  formats: FormatRegistry
  streams: EventStreams
  plainRoutes: PlainRoutes
  errorHeaders: ErrorHeaders
  routeContext: HttpRouteContext
}

const UNARY = { streaming: false, requestStream: false } as const
const SERVER_STREAM = { streaming: true, requestStream: false } as const
const CLIENT_STREAM = { streaming: false, requestStream: true } as const
const BIDI_STREAM = { streaming: true, requestStream: true } as const

/** The URL an endpoint of a context with `prefix` answers on (Fastify's own joining rule). */
function withPrefix(prefix: string, url: string): string {
  if (!prefix) return url
  return url === '/' ? prefix : `${prefix}${url}`
}

/** Registers one endpoint of a kind in a context. */
type Registrar<H> = (instance: FastifyInstance, name: string, o: EndpointOptions, h: H) => EndpointDefinition

interface Registrars {
  unary: Registrar<UnaryHandler<any, any>>
  stream: Registrar<StreamHandler<any, any>>
  clientStream: Registrar<ClientStreamHandler<any, any>>
  bidiStream: Registrar<BidiStreamHandler<any, any>>
}

/**
 * The four endpoint kinds' registrars. One registry (names are one namespace on every transport), but
 * routes belong to the context that registers them: `child.trivium.endpoint()` gets the child's prefix,
 * hooks and decorators over HTTP.
 */
function registrars(parts: TriviumParts): Registrars {
  const { registry, pipeline, formats, routeContext } = parts
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
  return {
    unary: (instance, name, o, h) =>
      register(instance, o, (options) => registry.add(name, options, h, UNARY)),
    stream: (instance, name, o, h) =>
      register(instance, o, (options) => registry.add(name, options, h, SERVER_STREAM)),
    clientStream: (instance, name, o, h) =>
      register(instance, o, (options) => registry.add(name, options, h, CLIENT_STREAM)),
    bidiStream: (instance, name, o, h) =>
      register(instance, o, (options) => registry.add(name, options, h, BIDI_STREAM)),
  }
}

/** `fastify.trivium` of the plugin's own context. */
function rootTrivium(fastify: FastifyInstance, parts: TriviumParts, add: Registrars): Trivium {
  const { registry, pipeline, formats, streams, plainRoutes, errorHeaders, routeContext } = parts
  const invoker = new Invoker(registry, pipeline)
  return {
    endpoint(name: string, o: EndpointOptions, h: UnaryHandler<any, any>): any {
      return add.unary(fastify, name, o, h)
    },
    stream(name: string, o: EndpointOptions, h: StreamHandler<any, any>): any {
      return add.stream(fastify, name, o, h)
    },
    clientStream(name: string, o: EndpointOptions, h: ClientStreamHandler<any, any>): any {
      return add.clientStream(fastify, name, o, h)
    },
    bidiStream(name: string, o: EndpointOptions, h: BidiStreamHandler<any, any>): any {
      return add.bidiStream(fastify, name, o, h)
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
      addBodyParser(fastify, format, routeContext.bodyLimit)
    },
    invoke(init) {
      return invoker.invoke(init)
    },
    start(init) {
      return invoker.start(init)
    },
    guardRoute(rules, definition) {
      plainRoutes.guard(rules, definition)
    },
    setEarlyRouteGuard(guard) {
      plainRoutes.setEarlyGuard(guard)
    },
    registry,
    formats,
    pipeline,
    bodyLimit: routeContext.bodyLimit,
    errorHeaders,
    get sessionHub() {
      return streams.hub
    },
    set sessionHub(hub) {
      streams.hub = hub
    },
  }
}

function addBodyParser(fastify: FastifyInstance, format: WireFormat, bodyLimit: number): void {
  if (format.contentType === 'application/json') return // Fastify's own (secure) JSON parser
  fastify.addContentTypeParser(
    format.contentType,
    { parseAs: 'buffer', bodyLimit },
    (_req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void) =>
      done(null, body),
  )
}

/** Decorates `fastify.trivium`: the plugin's context gets its own, each child context a view of it. */
export function decorateTrivium(fastify: FastifyInstance, parts: TriviumParts): void {
  const add = registrars(parts)
  const trivium = rootTrivium(fastify, parts, add)
  const { pipeline } = parts
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
          value: (name: string, o: EndpointOptions, h: UnaryHandler<any, any>) =>
            add.unary(instance, name, o, h),
        },
        stream: {
          value: (name: string, o: EndpointOptions, h: StreamHandler<any, any>) =>
            add.stream(instance, name, o, h),
        },
        clientStream: {
          value: (name: string, o: EndpointOptions, h: ClientStreamHandler<any, any>) =>
            add.clientStream(instance, name, o, h),
        },
        bidiStream: {
          value: (name: string, o: EndpointOptions, h: BidiStreamHandler<any, any>) =>
            add.bidiStream(instance, name, o, h),
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
}
