// The documented seven security headers on the HTTP responses of Trivium's routes — endpoints, plain routes
// with `config.triviumRoute`, and the errors core answers below the routes when the app asked for them — or,
// with `routes: 'all'`, on every response of the context (an app that owns all its routes, as the demo). A
// guest leaves the host's other routes as they were (their own helmet, or none). From one precomputed
// list, set when the request starts (onRequest: a route may still set its own value, as with helmet) and
// in onSend for a response sent before that hook ran (an app's onRequest hook registered earlier answered).
// Both hooks always: whether some hook runs earlier is nowhere in Fastify's public API. A successful WebSocket upgrade is hijacked and
// its 101 is written by `ws`, so it carries none of them (HTTP responses only, README "Security headers").
import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { SETUP } from './setup-errors.js'

export const DEFAULT_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'X-XSS-Protection': '1; mode=block',
  'Strict-Transport-Security': 'max-age=31536000; includeSubDomains',
  'Content-Security-Policy': "default-src 'self'",
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  'Permissions-Policy': 'geolocation=(), microphone=(), camera=()',
})

export interface SecurityHeadersOptions {
  /** Extra headers; a name equal (case-insensitively) to a default replaces that default. */
  headers?: Record<string, string>
  /**
   * Which responses get them. `'trivium'` (the default): Trivium's endpoints, routes that opt in with
   * `config.triviumRoute`, and the errors @trivium/core answers below the routes. `'all'`: every response
   * of this context, the application's own routes and 404s included (an app that owns its routes).
   */
  routes?: 'trivium' | 'all'
}

/**
 * A route of Trivium's: an endpoint's (core marks it `config.trivium`), one that opted in
 * (`config.triviumRoute`), or one a Trivium plugin serves itself (`config.triviumOwned`: @trivium/openapi's
 * document and page).
 */
export function isTriviumRouteConfig(config: object | undefined): boolean {
  // The keys are declared by other packages (core, auth); `in` needs no type of theirs.
  return config !== undefined && ('trivium' in config || 'triviumRoute' in config || 'triviumOwned' in config)
}

export function isTriviumRoute(request: FastifyRequest): boolean {
  return isTriviumRouteConfig(request.routeOptions.config)
}

/**
 * A reply's route as a protection's hook found it: 0 not read yet, 1 Trivium's, 2 another's. Fastify's
 * `request.routeOptions` builds a new object on each read; the security headers' and CORS' hooks read it
 * once per request between them.
 */
const ROUTE_KIND: unique symbol = Symbol('trivium.protections.routeKind')

declare module 'fastify' {
  interface FastifyReply {
    [ROUTE_KIND]: number
  }
}

/** Declares the reply field `isTriviumReply` keeps its answer in (replies keep one shape). */
export function declareRouteKind(fastify: FastifyInstance): void {
  if (!fastify.hasReplyDecorator(ROUTE_KIND)) fastify.decorateReply(ROUTE_KIND, 0)
}

/** `isTriviumRoute`, read once per request: the answer is kept on the reply for the other hooks. */
export function isTriviumReply(request: FastifyRequest, reply: FastifyReply): boolean {
  const kind = reply[ROUTE_KIND]
  if (kind === 1) return true
  if (kind === 2) return false
  const trivium = isTriviumRoute(request)
  reply[ROUTE_KIND] = trivium ? 1 : 2
  return trivium
}

function checkRoutes(value: unknown): 'trivium' | 'all' {
  if (value === undefined || value === 'trivium' || value === 'all') return value ?? 'trivium'
  throw SETUP.TRV_PROTECTIONS_SECURITY_HEADERS(
    `securityHeaders.routes must be 'trivium' or 'all', got ${JSON.stringify(value)}`,
  )
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const BAD_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/

/** The defaults merged with `custom`, names compared case-insensitively (the custom spelling wins). */
export function mergeSecurityHeaders(custom: Record<string, string> = {}): Record<string, string> {
  if (typeof custom !== 'object' || custom === null) {
    throw SETUP.TRV_PROTECTIONS_SECURITY_HEADERS('securityHeaders.headers must be an object of name → value')
  }
  const byLowerName = new Map<string, [string, string]>()
  for (const [name, value] of Object.entries(DEFAULT_SECURITY_HEADERS))
    byLowerName.set(name.toLowerCase(), [name, value])
  for (const [name, value] of Object.entries(custom)) {
    if (!TOKEN.test(name))
      throw SETUP.TRV_PROTECTIONS_SECURITY_HEADERS(`invalid header name ${JSON.stringify(name)}`)
    if (typeof value !== 'string' || BAD_VALUE.test(value)) {
      throw SETUP.TRV_PROTECTIONS_SECURITY_HEADERS(
        `header ${name} must have a string value without control characters`,
      )
    }
    byLowerName.set(name.toLowerCase(), [name, value])
  }
  return Object.fromEntries(byLowerName.values())
}

/** The same headers with lower-case names, as Fastify stores them (the wire form is unchanged). */
function lowerCaseNames(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value
  return lower
}

/** Every option name of securityHeaders: any other is refused with the nearest one named. */
export const SECURITY_HEADERS_OPTIONS = optionNames<SecurityHeadersOptions>()('headers', 'routes')

const securityHeadersPlugin: FastifyPluginAsync<SecurityHeadersOptions> = async (fastify, options) => {
  refuseUnknownOptions('@trivium/protections', options, SECURITY_HEADERS_OPTIONS)
  // Fastify stores reply headers under lower-case names (and so puts them on the wire); keys that are
  // lower case already make each `reply.header` call about twice as cheap (no new string to intern).
  // Names and values as two arrays: `reply.headers(object)` would list the object's keys per request.
  const headers = lowerCaseNames(mergeSecurityHeaders(options.headers))
  const everyRoute = checkRoutes(options.routes) === 'all'
  // Errors answered below the routes (bad request lines, 414, 431, 404) carry them too.
  if (fastify.hasDecorator('trivium')) Object.assign(fastify.trivium.errorHeaders, headers)
  const names = Object.keys(headers)
  const values = Object.values(headers)
  const count = names.length
  // Set when the request starts: never slower than in onSend (bench/README.md), and a route may still
  // replace one. The reply flag (declared with decorateReply, so replies keep one shape) marks that;
  // the onSend check costs ~0.2 µs a request (bench/README.md "security headers").
  const setAll = (reply: FastifyReply): void => {
    for (let i = 0; i < count; i++) reply.header(names[i] as string, values[i])
  }
  if (!fastify.hasReplyDecorator(APPLIED)) fastify.decorateReply(APPLIED, false)
  declareRouteKind(fastify)
  fastify.addHook(
    'onRequest',
    function setSecurityHeaders(request: FastifyRequest, reply: FastifyReply, done) {
      if (everyRoute || isTriviumReply(request, reply)) {
        setAll(reply)
        reply[APPLIED] = true
      }
      done()
    },
  )
  fastify.addHook(
    'onSend',
    function securityHeadersFallback(request: FastifyRequest, reply: FastifyReply, payload: unknown, done) {
      if (!reply[APPLIED] && (everyRoute || isTriviumReply(request, reply))) setAll(reply)
      done(null, payload)
    },
  )
}

/** Set on a reply once the plugin's onRequest hook put the headers on it. */
const APPLIED: unique symbol = Symbol('trivium.securityHeaders.applied')

declare module 'fastify' {
  interface FastifyReply {
    [APPLIED]: boolean
  }
}

/** Adds the documented security headers (plus configured ones) to Trivium's HTTP responses (or every one). */
export const securityHeaders = fp(securityHeadersPlugin, {
  fastify: '^5.12.1',
  name: '@trivium/protections/security-headers',
})
