// @trivium/tracing: OpenTelemetry spans for every Trivium call on every transport. Depends on
// @opentelemetry/api only: without an SDK the spans are no-ops; the application installs the SDK.
import { type Tracer, trace } from '@opentelemetry/api'
import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { tracingMiddleware } from './middleware.js'
import { SETUP } from './setup-errors.js'

export { ATTR } from './middleware.js'
export { formatTraceparent, parseTraceparent } from './traceparent.js'

export const TRACING_MIDDLEWARE_NAME = 'tracing'
export const TRACER_NAME = '@trivium/tracing'

export interface TriviumTracingOptions {
  /** Tracer to use (default: `trace.getTracer('@trivium/tracing')` of the global provider). */
  tracer?: Tracer
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const TRACING_OPTIONS = optionNames<TriviumTracingOptions>()('tracer')

const tracing: FastifyPluginAsync<TriviumTracingOptions> = async (fastify, options = {}) => {
  if (typeof options !== 'object' || options === null) throw SETUP.TRV_TRACING_OPTIONS()
  refuseUnknownOptions('@trivium/tracing', options, TRACING_OPTIONS)
  const tracer = options.tracer ?? trace.getTracer(TRACER_NAME)
  if (typeof tracer?.startSpan !== 'function') throw SETUP.TRV_TRACING_TRACER()
  fastify.trivium.use(tracingMiddleware(tracer), { name: TRACING_MIDDLEWARE_NAME, first: true })
}

export const triviumTracing = fp(tracing, {
  fastify: '^5.12.1',
  name: '@trivium/tracing',
  dependencies: ['@trivium/core'],
  decorators: { fastify: ['trivium'] },
})
export default triviumTracing
