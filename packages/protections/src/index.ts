// @trivium/protections: rate limiting (all transports), security headers and CORS (HTTP), one plugin per
// concern plus `triviumProtections`, which registers all three with the documented defaults.
import { enforcesSettings, optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { CORS_OPTIONS, type CorsOptions, cors } from './cors.js'
import { RATE_LIMIT_OPTIONS, type RateLimitPluginOptions, rateLimit } from './rate-limit/plugin.js'
import { SECURITY_HEADERS_OPTIONS, type SecurityHeadersOptions, securityHeaders } from './security-headers.js'

export { CORS_DEFAULTS, type CorsOptions, cors, ORIGIN_NOT_ALLOWED, originMatcher } from './cors.js'
export {
  RateLimiter,
  type RateLimiterOptions,
  STORE_UNAVAILABLE_MESSAGE,
  type WhenStoreDown,
} from './rate-limit/limiter.js'
export {
  DEFAULT_SWEEP_INTERVAL_MS,
  MemoryStore,
  type MemoryStoreOptions,
  type RateLimitStore,
} from './rate-limit/memory-store.js'
export {
  clientId,
  RATE_LIMIT_MIDDLEWARE_NAME,
  type RateLimitPluginOptions,
  rateLimit,
  type TriviumRateLimit,
} from './rate-limit/plugin.js'
export {
  type RedisClientLike,
  RedisStore,
  type RedisStoreOptions,
  StoreUnavailableError,
} from './rate-limit/redis-store.js'
export {
  DEFAULT_LIMIT,
  evaluateWindow,
  type RateLimit,
  type RateLimitResult,
  type WindowState,
} from './rate-limit/window.js'
export {
  DEFAULT_SECURITY_HEADERS,
  type SecurityHeadersOptions,
  securityHeaders,
} from './security-headers.js'

import { SETUP } from './setup-errors.js'

export interface TriviumProtectionsOptions {
  /**
   * Rate-limit options, or false for no rate limiting at all: the limits endpoints declare are then not
   * applied either (said at start-up, as a warning).
   */
  rateLimit?: RateLimitPluginOptions | false
  /** Security-header options, or false to leave them out. */
  securityHeaders?: SecurityHeadersOptions | false
  /** CORS options, or false to leave CORS out. */
  cors?: CorsOptions | false
}

const PLUGIN = '@trivium/protections'
/** Every option name of the plugin: any other is refused with the nearest one named. */
const PROTECTIONS_OPTIONS = optionNames<TriviumProtectionsOptions>()('rateLimit', 'securityHeaders', 'cors')

const protections: FastifyPluginAsync<TriviumProtectionsOptions> = async (fastify, options) => {
  if (typeof options !== 'object' || options === null) {
    throw SETUP.TRV_PROTECTIONS_OPTIONS('options')
  }
  refuseUnknownOptions(PLUGIN, options, PROTECTIONS_OPTIONS)
  // Named with their place here (`cors.allowedOrigin`), before each part checks its own.
  refuseUnknownOptions(PLUGIN, options.securityHeaders, SECURITY_HEADERS_OPTIONS, 'securityHeaders.')
  refuseUnknownOptions(PLUGIN, options.cors, CORS_OPTIONS, 'cors.')
  refuseUnknownOptions(PLUGIN, options.rateLimit, RATE_LIMIT_OPTIONS, 'rateLimit.')
  // Security headers first (set in onRequest, so a preflight answered by CORS carries them), then CORS: a
  // preflight is answered before the rest runs.
  if (options.securityHeaders !== false)
    await fastify.register(securityHeaders, options.securityHeaders ?? {})
  if (options.cors !== false) await fastify.register(cors, options.cors ?? {})
  if (options.rateLimit !== false) await fastify.register(rateLimit, options.rateLimit ?? {})
  else switchRateLimitsOff(fastify)
}

/**
 * `rateLimit: false` is the application's own decision to apply no limit, including those endpoints
 * declare (`rateLimit` settings, e.g. @trivium/auth's on login): it stands in as their enforcer, so core
 * does not refuse to start, and says at start-up which declared limits are off. Without this plugin at
 * all, a declared limit refuses to start.
 */
function switchRateLimitsOff(fastify: FastifyInstance): void {
  fastify.trivium.use(
    enforcesSettings(['rateLimit'], (_call, next) => next()),
    { name: 'rate-limits-off' },
  )
  fastify.addHook('onReady', async () => {
    const declared = fastify.trivium.registry
      .list()
      .filter((d) => d.config.rateLimit !== undefined && d.config.rateLimit !== false)
      .map((d) => d.name)
    if (declared.length > 0) {
      fastify.log.warn(
        `@trivium/protections: rate limiting is off (rateLimit: false): the limits declared on ${declared.join(', ')} are not applied`,
      )
    }
  })
}

/** All three protections with the documented defaults; each can be configured or switched off. */
export const triviumProtections = fp(protections, {
  fastify: '^5.12.1',
  name: '@trivium/protections',
  dependencies: ['@trivium/core'],
})
export default triviumProtections
