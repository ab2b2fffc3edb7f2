// @trivium/protections: rate limiting (all transports), security headers and CORS (HTTP), one plugin per
// concern plus `triviumProtections`, which registers all three with the documented defaults.
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { type CorsOptions, cors } from './cors.js'
import { type RateLimitPluginOptions, rateLimit } from './rate-limit.js'
import { type SecurityHeadersOptions, securityHeaders } from './security-headers.js'

export * from './cors.js'
export * from './limiter.js'
export * from './memory-store.js'
export * from './rate-limit.js'
export * from './redis-store.js'
export * from './security-headers.js'
export * from './window.js'

export interface TriviumProtectionsOptions {
  /** Rate-limit options, or false to leave rate limiting out. */
  rateLimit?: RateLimitPluginOptions | false
  /** Security-header options, or false to leave them out. */
  securityHeaders?: SecurityHeadersOptions | false
  /** CORS options, or false to leave CORS out. */
  cors?: CorsOptions | false
}

const protections: FastifyPluginAsync<TriviumProtectionsOptions> = async (fastify, options) => {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('@trivium/protections: options must be an object')
  }
  // Security headers first (set in onRequest, so a preflight answered by CORS carries them), then CORS: a
  // preflight is answered before the rest runs.
  if (options.securityHeaders !== false)
    await fastify.register(securityHeaders, options.securityHeaders ?? {})
  if (options.cors !== false) await fastify.register(cors, options.cors ?? {})
  if (options.rateLimit !== false) await fastify.register(rateLimit, options.rateLimit ?? {})
}

/** All three protections with the documented defaults; each can be configured or switched off. */
export const triviumProtections = fp(protections, {
  fastify: '5.x',
  name: '@trivium/protections',
  dependencies: ['@trivium/core'],
})
export default triviumProtections
