// `fastify.trivium`: its type (the decorator that builds it is decorate-trivium.ts).
import type { Contract } from '@trivium/contract'
import type { SessionHub } from '@trivium/wire/sessions'
import type { ContractHandlers, ContractSettings } from './contract.js'
import type { FormatRegistry, WireFormat } from './formats.js'
import type { ErrorHeaders } from './http/framework-errors.js'
import type { InvokeInit, InvokeResult, StartedCall } from './invoke.js'
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

export interface Trivium {
  /** Registers a unary endpoint under `name`, served on every transport. */
  endpoint<Req = unknown, Res = unknown>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: UnaryHandler<Req, Res>,
  ): UnaryDefinition<Req, Res>
  /** The same with schemas as models (TypeBox, Standard Schema, JSON Schema): the handler is typed from them. */
  endpoint<Q extends ModelSource = Model<unknown>, R extends ModelSource = Model<unknown>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: UnaryHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): UnaryDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /** Registers a streaming endpoint: the handler is an async generator of response items. */
  stream<Req = unknown, Item = unknown>(
    name: string,
    options: EndpointOptions<Req, Item>,
    handler: StreamHandler<Req, Item>,
  ): StreamDefinition<Req, Item>
  stream<Q extends ModelSource = Model<unknown>, R extends ModelSource = Model<unknown>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: StreamHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): StreamDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /**
   * Registers a client stream (WebSocket and TCP): the handler takes the request items as they arrive
   * and answers one response. Over HTTP the route refuses every call (PROTOCOL.md "Client and
   * bidirectional streams"). POST only.
   */
  clientStream<Req = unknown, Res = unknown>(
    name: string,
    options: EndpointOptions<Req, Res>,
    handler: ClientStreamHandler<Req, Res>,
  ): ClientStreamDefinition<Req, Res>
  clientStream<Q extends ModelSource = Model<unknown>, R extends ModelSource = Model<unknown>>(
    name: string,
    options: SchemaEndpointOptions<Q, R>,
    handler: ClientStreamHandler<SchemaOutput<Q>, SchemaInput<R>>,
  ): ClientStreamDefinition<SchemaOutput<Q>, SchemaInput<R>>
  /** Registers a bidirectional stream (WebSocket and TCP): request items in, response items out. POST only. */
  bidiStream<Req = unknown, Item = unknown>(
    name: string,
    options: EndpointOptions<Req, Item>,
    handler: BidiStreamHandler<Req, Item>,
  ): BidiStreamDefinition<Req, Item>
  bidiStream<Q extends ModelSource = Model<unknown>, R extends ModelSource = Model<unknown>>(
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
