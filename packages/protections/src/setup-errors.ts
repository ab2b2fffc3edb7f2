// @trivium/protections' refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/protections', {
  TRV_PROTECTIONS_OPTIONS: {
    when: "the plugin's (or a part's) options are not an object",
    message: (what: string) => `${what} must be an object`,
  },
  TRV_PROTECTIONS_RATE_LIMIT: {
    when: 'a rate limit is not `{ requests, windowMs }` (positive integers) or false',
    message: (where: string, what: string) => `${where}${what}`,
  },
  TRV_PROTECTIONS_SWEEP_INTERVAL: {
    when: '`sweepIntervalMs` is not a non-negative integer',
    message: () => 'sweepIntervalMs must be a non-negative integer (milliseconds)',
  },
  TRV_PROTECTIONS_WHEN_STORE_DOWN: {
    when: '`whenStoreDown` is not "memory", "open" or "closed"',
    message: () => 'whenStoreDown must be "memory", "open" or "closed"',
  },
  TRV_PROTECTIONS_AFTER_AUTH: {
    when: '`afterAuth` is not a boolean',
    message: () => 'afterAuth must be a boolean',
  },
  TRV_PROTECTIONS_STORE: {
    when: '`store` has no `hit(key, limit)`',
    message: () => 'store must have a hit(key, limit) method',
  },
  TRV_PROTECTIONS_REDIS: {
    when: '`redis` is not an ioredis client, or `redisPrefix`, `redisTimeoutMs`, `redisMaxBatch` are out of range',
    message: (what: string) => what,
  },
  TRV_PROTECTIONS_CORS: {
    when: 'a `cors` option has a wrong type or value (lists, `allowCredentials`, `maxAge`, `routes`)',
    message: (what: string) => `cors.${what}`,
  },
  TRV_PROTECTIONS_CORS_CREDENTIALS: {
    when: '`cors.allowCredentials` with the origin "*"',
    message: () =>
      'cors.allowCredentials cannot be combined with the origin "*" (any site could make credentialed requests); list the allowed origins',
  },
  TRV_PROTECTIONS_CORS_TWICE: {
    when: 'cors is registered twice in one context chain',
    message: () =>
      'cors is registered twice (this context or a parent already has it, from triviumProtections or cors); register it once, with all its options there',
  },
  TRV_PROTECTIONS_CORS_OPTIONS_ROUTE: {
    when: "with `routes: 'all'`, an application OPTIONS route is added after cors, or @fastify/cors's `OPTIONS *` exists",
    message: (routes: string, many: boolean) =>
      `cors answers every OPTIONS request as a CORS preflight, so the route${many ? 's' : ''} ${routes} would never run; remove ${many ? 'them' : 'it'}, or register @trivium/protections with { cors: false } (and keep @fastify/cors)`,
  },
  TRV_PROTECTIONS_SECURITY_HEADERS: {
    when: '`securityHeaders.routes` or `securityHeaders.headers` has a wrong type or value, or a header name or value is invalid',
    message: (what: string) => what,
  },
})
