// Existing Fastify routes under Trivium's rules (README "Protecting existing routes"): a route with
// `config: { triviumRoute: { auth, permissions, roles, rateLimit } }` runs the app's Trivium middleware
// chain (auth, RBAC, rate limit, …) in a preHandler, exactly as an endpoint would, and gets the caller as
// `request.user`. Refusals are the one error body of PROTOCOL.md.
import {
  type EndpointDefinition,
  httpCredential,
  normalizeError,
  TriviumCall,
  type TriviumEndpointConfig,
  type TriviumIdentity,
  toErrorBody,
} from '@trivium/core'
import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteOptions,
} from 'fastify'

/** The rules of a protected plain route: every endpoint setting the registered plugins declare. */
export interface TriviumRouteRules extends TriviumEndpointConfig {
  /** Name used by rate-limit keys and logs (default `<METHOD> <url>`, e.g. `GET /legacy`). */
  name?: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Run this plain route through the Trivium middleware (auth, RBAC, rate limit) like an endpoint. */
    triviumRoute?: TriviumRouteRules
  }
  interface FastifyRequest {
    /** The authenticated caller on routes with `config.triviumRoute` (undefined when anonymous). */
    user: TriviumIdentity | undefined
  }
}

function definitionOf(rules: TriviumRouteRules, method: string, url: string): EndpointDefinition {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) {
    throw new TypeError(`@trivium/auth: route ${method} ${url}: config.triviumRoute must be an object`)
  }
  const name = rules.name ?? `${method} ${url}`
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(`@trivium/auth: route ${method} ${url}: config.triviumRoute.name must be a string`)
  }
  // Middleware read name, config and timeoutMs of a definition; a plain route has no models or handler.
  return {
    name,
    method,
    url,
    config: rules,
    timeoutMs: undefined,
    streaming: false,
  } as unknown as EndpointDefinition
}

/** Runs the middleware chain for a protected route; resolves true when it answered (a refusal). */
async function runGuard(
  fastify: FastifyInstance,
  definition: EndpointDefinition,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const call = new TriviumCall({
    definition,
    protocol: 'http',
    requestId: request.id,
    log: request.log,
    headers: request.headers,
    method: request.method,
    query: request.query as Record<string, unknown>,
    clientIp: request.ip,
    raw: request,
    decodeBody: () => request.body,
    credential: () => httpCredential(request.headers, request.query as Record<string, unknown>),
  })
  try {
    await fastify.trivium.pipeline.run(call, () => undefined)
  } catch (err) {
    const { error, internal } = normalizeError(err)
    if (internal) request.log.error({ err, requestId: request.id }, 'unhandled error in route middleware')
    if (call.responseHeaders) reply.headers(call.responseHeaders)
    const body = toErrorBody(error, request.id)
    if (body.retryAfter !== undefined) reply.header('retry-after', String(body.retryAfter))
    reply.code(error.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body))
    return true
  }
  if (call.responseHeaders) reply.headers(call.responseHeaders)
  request.user = call.identity
  return false
}

/**
 * Installs the guard: an app-wide preHandler (so routes added before this plugin are covered too) that
 * acts only on routes with `config.triviumRoute`; an onRoute hook refuses a malformed option at once.
 */
export function installRouteGuard(fastify: FastifyInstance): void {
  // Keyed by the rules object, which the route's options and `request.routeOptions.config` share.
  const definitions = new WeakMap<object, EndpointDefinition>()
  fastify.addHook('onRoute', function recordRoute(this: FastifyInstance, route: RouteOptions) {
    const rules = route.config?.triviumRoute
    if (rules === undefined) return
    const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
    const definition = definitionOf(rules, method, route.url)
    definitions.set(rules, definition)
    // Middleware scoped to a child context (child.trivium.use) applies to that context's routes too.
    fastify.trivium.pipeline.setContext(definition, this)
  })
  const configOf = routeConfigReader()
  // Callback style: routes without the option (every endpoint) pass without a promise.
  fastify.addHook('preHandler', (request, reply, done) => {
    const rules = configOf(request).triviumRoute
    if (rules === undefined) return done()
    let definition = definitions.get(rules)
    if (definition === undefined) {
      // A route added before this plugin: app-wide middleware only (its context was not seen).
      const options = request.routeOptions
      const method = Array.isArray(options.method) ? options.method.join(',') : String(options.method)
      definition = definitionOf(rules, method, options.url ?? request.url)
      definitions.set(rules, definition)
    }
    runGuard(fastify, definition, request, reply).then((answered) => {
      if (!answered) done()
    }, done)
  })
}

/** What the guard reads of Fastify's route context. */
interface RouteContext {
  config: FastifyContextConfig
}

/**
 * How the guard reads a request's route config. `request.routeOptions.config` is the public way, but its
 * getter builds a twelve-field object (and asks the router about version constraints) on every access,
 * and the guard runs on every route of the app. The route context Fastify keeps on each request under
 * its internal `fastify.context` symbol holds the same `config` object: found on the first request and
 * used once it is seen to be that object; otherwise (another Fastify build) the public getter stays.
 */
export function routeConfigReader(): (request: FastifyRequest) => FastifyContextConfig {
  let context: symbol | undefined
  let decided = false
  const held = (request: FastifyRequest, symbol: symbol) =>
    (request as unknown as Record<symbol, RouteContext | undefined>)[symbol]
  return (request) => {
    if (context !== undefined) {
      const config = held(request, context)?.config
      if (config !== undefined) return config
    }
    const config = request.routeOptions.config
    if (!decided) {
      decided = true
      const symbol = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context')
      if (symbol !== undefined && held(request, symbol)?.config === config) context = symbol
    }
    return config
  }
}
