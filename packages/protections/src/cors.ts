// CORS as the README ("CORS") documents, in one onRequest hook (so it also answers OPTIONS on routes that do not exist):
// an OPTIONS request is a preflight, answered here with 200 + headers or 403 `Origin not allowed`; other
// requests with an allowed Origin get the same headers minus Access-Control-Max-Age (plus
// Access-Control-Expose-Headers when `exposedHeaders` lists some). Which requests: with `routes: 'trivium'`
// (the default, a guest's) those to Trivium's routes only — a preflight when its path and requested method
// match one of them (found with Fastify's own router, find-my-way, over the routes Trivium owns) — so the
// host's routes, its OPTIONS routes and its @fastify/cors stay as they were; with `routes: 'all'` every one, but
// an OPTIONS route registered before the plugin still answers its own requests (refuseLaterOptionsRoutes).
import { ORIGIN_NOT_ALLOWED, optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import FindMyWay, { type HTTPMethod } from 'find-my-way'
import { declareRouteKind, isTriviumReply, isTriviumRouteConfig } from './security-headers.js'
import { SETUP } from './setup-errors.js'

export interface CorsOptions {
  /** Allowed origins (default `['*']`): `*` = any, `*.example.com` = any subdomain, else exact. */
  allowedOrigins?: string[]
  /** Default GET, POST, PUT, DELETE, OPTIONS. */
  allowedMethods?: string[]
  /**
   * Default Content-Type, Authorization (the spec's). @trivium/client's default calls need no other; add
   * `Trivium-Timeout-Ms` for deadlines a page sets itself and `Idempotency-Key` for idempotent calls.
   */
  allowedHeaders?: string[]
  /**
   * Response headers a page's script may read (`Access-Control-Expose-Headers`, on responses to an
   * allowed Origin, not on preflights). Default none, e.g. `['Idempotent-Replayed', 'Retry-After',
   * 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']`.
   */
  exposedHeaders?: string[]
  /** Sends `Access-Control-Allow-Credentials: true` (default false). Refused together with `*`. */
  allowCredentials?: boolean
  /** Access-Control-Max-Age in seconds (default 86400). */
  maxAge?: number
  /**
   * Which requests it answers. `'trivium'` (the default): those to Trivium's endpoints and to routes that
   * opt in with `config.triviumRoute`, and the preflights for them; the application's other routes (and
   * its own OPTIONS routes or @fastify/cors) are left as they were. `'all'`: every request of this context,
   * every OPTIONS request a preflight, except one that an application OPTIONS route registered before the
   * plugin answers; such a route added after it, and @fastify/cors's `OPTIONS *`, are refused at start.
   */
  routes?: 'trivium' | 'all'
}

export const CORS_DEFAULTS = Object.freeze({
  allowedOrigins: Object.freeze(['*']),
  allowedMethods: Object.freeze(['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS']),
  allowedHeaders: Object.freeze(['Content-Type', 'Authorization']),
  exposedHeaders: Object.freeze([] as string[]),
  allowCredentials: false,
  maxAge: 86_400,
})

export { ORIGIN_NOT_ALLOWED }

function stringList(value: unknown, name: string): string[] {
  if (
    !Array.isArray(value) ||
    value.some((v) => typeof v !== 'string' || v.length === 0 || /[\r\n,]/.test(v))
  ) {
    throw SETUP.TRV_PROTECTIONS_CORS(`${name} must be an array of non-empty strings without commas`)
  }
  return [...value]
}

/** Up to this many exact origins are compared one by one instead of looked up in a Set. */
const SHORT_LIST = 8

/**
 * Builds the origin test. `*.example.com` matches an origin ending in `.example.com` (a dot boundary):
 * `https://api.example.com` yes, `https://evilexample.com` and `https://example.com` no. A
 * literal "ends with example.com" would let `evilexample.com` in; that hole is closed on purpose.
 */
export function originMatcher(allowedOrigins: readonly string[]): (origin: string) => boolean {
  if (allowedOrigins.includes('*')) return () => true
  const exact = new Set<string>()
  const suffixes: string[] = []
  for (const entry of allowedOrigins) {
    if (entry.startsWith('*.'))
      suffixes.push(entry.slice(1)) // keeps the leading dot
    else exact.add(entry)
  }
  function bySuffix(origin: string): boolean {
    for (const suffix of suffixes) {
      if (origin.length > suffix.length && origin.endsWith(suffix)) return true
    }
    return false
  }
  // A short list is compared string by string (a length check, then the characters): cheaper than
  // hashing the request's Origin, a fresh string every time, for a Set lookup.
  if (exact.size <= SHORT_LIST) {
    const list = [...exact]
    const count = list.length
    return (origin) => {
      for (let i = 0; i < count; i++) if (list[i] === origin) return true
      return bySuffix(origin)
    }
  }
  return (origin) => exact.has(origin) || bySuffix(origin)
}

/** Every option name of cors: any other is refused with the nearest one named. */
export const CORS_OPTIONS = optionNames<CorsOptions>()(
  'allowedOrigins',
  'allowedMethods',
  'allowedHeaders',
  'exposedHeaders',
  'allowCredentials',
  'maxAge',
  'routes',
)

function validate(options: CorsOptions) {
  if (typeof options !== 'object' || options === null) throw SETUP.TRV_PROTECTIONS_OPTIONS('cors options')
  refuseUnknownOptions('@trivium/protections', options, CORS_OPTIONS)
  const allowedOrigins = stringList(options.allowedOrigins ?? CORS_DEFAULTS.allowedOrigins, 'allowedOrigins')
  const allowedMethods = stringList(options.allowedMethods ?? CORS_DEFAULTS.allowedMethods, 'allowedMethods')
  const allowedHeaders = stringList(options.allowedHeaders ?? CORS_DEFAULTS.allowedHeaders, 'allowedHeaders')
  const exposedHeaders = stringList(options.exposedHeaders ?? CORS_DEFAULTS.exposedHeaders, 'exposedHeaders')
  const allowCredentials = options.allowCredentials ?? CORS_DEFAULTS.allowCredentials
  if (typeof allowCredentials !== 'boolean')
    throw SETUP.TRV_PROTECTIONS_CORS('allowCredentials must be a boolean')
  const maxAge = options.maxAge ?? CORS_DEFAULTS.maxAge
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw SETUP.TRV_PROTECTIONS_CORS('maxAge must be a non-negative integer (seconds)')
  }
  if (allowCredentials && allowedOrigins.includes('*')) {
    throw SETUP.TRV_PROTECTIONS_CORS_CREDENTIALS()
  }
  const routes = options.routes ?? 'trivium'
  if (routes !== 'trivium' && routes !== 'all')
    throw SETUP.TRV_PROTECTIONS_CORS(`routes must be 'trivium' or 'all', got ${JSON.stringify(routes)}`)
  return { allowedOrigins, allowedMethods, allowedHeaders, exposedHeaders, allowCredentials, maxAge, routes }
}

/** Marks a context (and, through Fastify's inheritance, its children) as already answering CORS. */
const REGISTERED = Symbol.for('@trivium/protections/cors')

const corsPlugin: FastifyPluginAsync<CorsOptions> = async (fastify, options) => {
  // A second registration would add a second hook whose options lose silently (the first one answers
  // every preflight): refused, so there is one place that says what the CORS policy is.
  if (fastify.hasDecorator(REGISTERED)) {
    throw SETUP.TRV_PROTECTIONS_CORS_TWICE()
  }
  const config = validate(options)
  fastify.decorate(REGISTERED, true)
  const isAllowed = originMatcher(config.allowedOrigins)
  // Everything but the origin is fixed, so it is computed once, with the lower-case names Fastify
  // stores (and writes) anyway: `reply.header` then has no name to convert.
  const common: Record<string, string> = {
    'access-control-allow-methods': config.allowedMethods.join(', '),
    'access-control-allow-headers': config.allowedHeaders.join(', '),
  }
  if (config.allowCredentials) common['access-control-allow-credentials'] = 'true'
  common.vary = 'Origin'
  const preflight: Record<string, string> = { ...common, 'access-control-max-age': String(config.maxAge) }
  // Expose-Headers only matters on the actual response (a browser ignores it on a preflight).
  const actual: Record<string, string> = { ...common }
  if (config.exposedHeaders.length > 0)
    actual['access-control-expose-headers'] = config.exposedHeaders.join(', ')
  // As two arrays for the per-request path (`reply.headers(object)` lists the keys every time).
  const actualNames = Object.keys(actual)
  const actualValues = Object.values(actual)
  const actualCount = actualNames.length

  const everyRoute = config.routes === 'all'
  const owned = everyRoute ? undefined : triviumRoutes(fastify)
  if (everyRoute) refuseLaterOptionsRoutes(fastify)

  declareRouteKind(fastify)
  fastify.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const origin = request.headers.origin
    if (request.method === 'OPTIONS') {
      // With routes: 'all', an OPTIONS request that found a route found one registered before this plugin (a
      // later one refuses start-up): that route answers, as it did before; any other is a preflight.
      if (owned === undefined ? request.is404 : owned.preflightFor(request)) {
        if (origin === undefined || !isAllowed(origin)) {
          reply.code(403).type('text/plain; charset=utf-8').send(ORIGIN_NOT_ALLOWED)
          return
        }
        reply.header('access-control-allow-origin', origin).headers(preflight).code(200).send()
        return
      }
      if (everyRoute) {
        done()
        return
      }
    }
    if (origin !== undefined && (everyRoute || isTriviumReply(request, reply)) && isAllowed(origin)) {
      reply.header('access-control-allow-origin', origin)
      for (let i = 0; i < actualCount; i++) {
        const name = actualNames[i]
        if (name !== undefined) reply.header(name, actualValues[i])
      }
    }
    done()
  })
}

/**
 * The routes Trivium owns in this context (endpoints: `config.trivium`; opted-in: `config.triviumRoute`),
 * seen as they are added, in a router with the application's matching rules: a preflight is Trivium's when
 * its path and requested method (`Access-Control-Request-Method`, else any method) match one of them.
 */
function triviumRoutes(fastify: FastifyInstance): { preflightFor(request: FastifyRequest): boolean } {
  const options = fastify.initialConfig.routerOptions ?? {}
  const router = FindMyWay({
    ignoreTrailingSlash: options.ignoreTrailingSlash ?? fastify.initialConfig.ignoreTrailingSlash ?? false,
    ignoreDuplicateSlashes:
      options.ignoreDuplicateSlashes ?? fastify.initialConfig.ignoreDuplicateSlashes ?? false,
    caseSensitive: options.caseSensitive ?? fastify.initialConfig.caseSensitive ?? true,
  })
  const methods = new Set<string>()
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (!isTriviumRouteConfig(route.config)) return
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      if (method === 'OPTIONS' || router.hasRoute(method as HTTPMethod, route.url)) continue
      router.on(method as HTTPMethod, route.url, () => {})
      methods.add(method)
    }
  })
  return {
    preflightFor(request) {
      const path = request.url.split('?')[0] ?? '/'
      const asked = request.headers['access-control-request-method']
      if (typeof asked === 'string') return router.find(asked.toUpperCase() as HTTPMethod, path) !== null
      for (const method of methods) if (router.find(method as HTTPMethod, path) !== null) return true
      return false
    },
  }
}

/**
 * With routes: 'all', an application OPTIONS route would be taken over by the preflight answer. Those added after
 * the plugin are seen by `onRoute` and refused at ready(): thrown from onRoute, the error would escape the plugin
 * that adds the route (@fastify/cors adds `OPTIONS *` outside its own promise) as an uncaught exception. Those
 * registered before cannot be listed (Fastify has no public listing), so the onRequest hook, which Fastify gives
 * them too, lets each keep answering (`request.is404` is false there). Except a catch-all `OPTIONS *`
 * (@fastify/cors's): found before with `hasRoute`, it is refused at once, since it would take every preflight.
 */
function refuseLaterOptionsRoutes(fastify: FastifyInstance): void {
  if (fastify.hasRoute({ method: 'OPTIONS', url: '/*' })) throw refuseOptionsRoutes(['*'])
  const late: string[] = []
  fastify.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.includes('OPTIONS')) late.push(route.url)
  })
  fastify.addHook('onReady', async () => {
    if (late.length > 0) throw refuseOptionsRoutes(late)
  })
}

function refuseOptionsRoutes(urls: string[]): TypeError {
  const named = urls.map((u) => (u === '*' ? 'OPTIONS * (the one @fastify/cors adds)' : `OPTIONS ${u}`))
  return SETUP.TRV_PROTECTIONS_CORS_OPTIONS_ROUTE(named.join(', '), urls.length > 1)
}

/** CORS exactly as the README documents; HTTP only (WebSocket messages and TCP frames never see it). */
export const cors = fp(corsPlugin, { fastify: '^5.12.1', name: '@trivium/protections/cors' })
