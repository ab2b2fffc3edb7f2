// @trivium/core — the Fastify plugin. Validates options, creates the registry and pipeline, decorates
// `fastify.trivium`, and serves every endpoint over HTTP. Other transports use `trivium.invoke`.

import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { decorateTrivium } from './decorate-trivium.js'
import { checkSettings } from './endpoint-settings.js'
import { FormatRegistry } from './formats.js'
import { HttpDrain } from './http/drain.js'
import type { ErrorHeaders } from './http/framework-errors.js'
import { Http2Sessions } from './http/http2.js'
import { EventStreams } from './http/sse.js'
import { installNotFoundHandler, installRootErrorHandler } from './http/whole-app.js'
import { Pipeline } from './middleware.js'
import { isNamedRoute } from './named-route.js'
import { checkJsonRule, type TriviumCoreOptions, validateOptions } from './plugin-options.js'
import { EndpointRegistry } from './registry.js'
import { PlainRoutes } from './route-guard/plain-routes.js'

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
export { type IdempotencyOptions, idempotency } from './idempotency/middleware.js'
export {
  IDEMPOTENCY_TABLE_SQL,
  type IdempotencyRecord,
  type IdempotencyScope,
  type IdempotencySqlClient,
  type IdempotencyStore,
  MemoryIdempotencyStore,
  SqlIdempotencyStore,
} from './idempotency/store.js'
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
export type { TriviumCoreOptions } from './plugin-options.js'
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
export type { Trivium } from './trivium.js'

/** How often a shutting-down server closes the keep-alive connections that have become idle. */
const IDLE_SWEEP_MS = 20

const triviumCore: FastifyPluginAsync<TriviumCoreOptions> = async (fastify: FastifyInstance, rawOptions) => {
  const options = validateOptions(rawOptions, fastify.initialConfig.pluginTimeout ?? 0)
  checkJsonRule(fastify)
  const registry = new EndpointRegistry()
  const pipeline = new Pipeline()
  const formats = new FormatRegistry()
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
  const plainRoutes = new PlainRoutes(fastify, registry, pipeline, errorHeaders)
  decorateTrivium(fastify, { registry, pipeline, formats, streams, plainRoutes, errorHeaders, routeContext })
  if (options.errorHandler) installRootErrorHandler(fastify, errorHeaders)
  if (options.notFoundHandler) installNotFoundHandler(fastify, errorHeaders)

  fastify.addHook('onReady', async () => {
    pipeline.checkOrder()
    checkRules(registry, pipeline, plainRoutes)
    registry.seal()
  })
  fastify.addHook('preClose', (done) => {
    streams.shutdown()
    drain.shutdown()
    http2Sessions.shutdown()
    closeIdleConnections(fastify)
    done()
  })
}

/** Every rule declared on an endpoint or plain route is enforced where it is declared (see endpoint-settings). */
function checkRules(registry: EndpointRegistry, pipeline: Pipeline, plainRoutes: PlainRoutes): void {
  const anywhere = pipeline.enforcedAnywhere()
  for (const definition of registry.list()) {
    if (isNamedRoute(definition)) continue // its rules are the route's, checked below
    const target = { label: `endpoint "${definition.name}"`, settings: definition.config }
    checkSettings(target, pipeline.enforcedFor(definition), anywhere)
  }
  plainRoutes.check(pipeline, anywhere)
}

// Shutdown (PROTOCOL.md "HTTP streaming"): event streams end with the 503 error event, unary calls
// still running after the grace are aborted and answered 503 (http/drain.ts), and each
// keep-alive connection is closed once it is idle (Node's server.close() closes only those idle at
// that moment, so one finishing a call later, or an ended stream's, would hold app.close() forever).
function closeIdleConnections(fastify: FastifyInstance): void {
  const server = fastify.server
  // An h2c server has no HTTP/1 connections (nor the method); an h2 one with allowHTTP1 has both.
  if (server.listening && typeof server.closeIdleConnections === 'function') {
    const timer = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
    timer.unref()
    server.once('close', () => clearInterval(timer))
  }
}

export const triviumCorePlugin = fp(triviumCore, { fastify: '^5.12.1', name: '@trivium/core' })
export default triviumCorePlugin
