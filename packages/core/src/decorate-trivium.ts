// The decorator of `fastify.trivium` (its type is trivium.ts): the plugin's context gets its own, each
// child context a view of it, so that `child.trivium.endpoint()` registers in the child.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { implementContract } from './contract.js'
import type { FormatRegistry, WireFormat } from './formats.js'
import type { ErrorHeaders } from './http/framework-errors.js'
import { type HttpRouteContext, registerHttpRoute } from './http/route.js'
import type { EventStreams } from './http/sse.js'
import { Invoker } from './invoke.js'
import type { Middleware, MiddlewareOptions, Pipeline } from './middleware.js'
import type {
  BidiStreamDefinition,
  BidiStreamHandler,
  ClientStreamDefinition,
  ClientStreamHandler,
  EndpointDefinition,
  EndpointOptions,
  EndpointRegistry,
  StreamDefinition,
  StreamHandler,
  UnaryDefinition,
  UnaryHandler,
} from './registry.js'
import type { PlainRoutes } from './route-guard/plain-routes.js'
import type { Trivium } from './trivium.js'

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
type Registrar<H, D> = (instance: FastifyInstance, name: string, o: EndpointOptions, h: H) => D

interface Registrars {
  unary: Registrar<UnaryHandler, UnaryDefinition>
  stream: Registrar<StreamHandler, StreamDefinition>
  clientStream: Registrar<ClientStreamHandler, ClientStreamDefinition>
  bidiStream: Registrar<BidiStreamHandler, BidiStreamDefinition>
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
    endpoint: (name: string, o: EndpointOptions, h: UnaryHandler) => add.unary(fastify, name, o, h),
    stream: (name: string, o: EndpointOptions, h: StreamHandler) => add.stream(fastify, name, o, h),
    clientStream: (name: string, o: EndpointOptions, h: ClientStreamHandler) =>
      add.clientStream(fastify, name, o, h),
    bidiStream: (name: string, o: EndpointOptions, h: BidiStreamHandler) =>
      add.bidiStream(fastify, name, o, h),
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
          value: (name: string, o: EndpointOptions, h: UnaryHandler) => add.unary(instance, name, o, h),
        },
        stream: {
          value: (name: string, o: EndpointOptions, h: StreamHandler) => add.stream(instance, name, o, h),
        },
        clientStream: {
          value: (name: string, o: EndpointOptions, h: ClientStreamHandler) =>
            add.clientStream(instance, name, o, h),
        },
        bidiStream: {
          value: (name: string, o: EndpointOptions, h: BidiStreamHandler) =>
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
