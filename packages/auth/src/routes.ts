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
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'

/** The rules of a protected plain route: every endpoint setting the registered plugins declare. */
export interface TriviumRouteRules extends TriviumEndpointConfig {
  /** Name used by rate-limit keys and logs (default `<METHOD> <url>`, e.g. `GET /legacy`). */
  name?: string
}

/**
 * Opt-in typing of `request.user`, as @fastify/jwt's `FastifyJWT`: empty by default, so a service that
 * declares `FastifyRequest.user` itself (or uses @fastify/jwt) is never contradicted. To type the caller
 * that `config.triviumRoute` routes get:
 * `declare module '@trivium/auth' { interface TriviumRequestUser { user: TriviumIdentity | undefined } }`.
 * Without it, read the caller with `triviumUser(request)`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the application augments it
export interface TriviumRequestUser {}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Run this plain route through the Trivium middleware (auth, RBAC, rate limit) like an endpoint. */
    triviumRoute?: TriviumRouteRules
  }
  interface FastifyRequest extends TriviumRequestUser {}
}

/** The authenticated caller of a `config.triviumRoute` route (undefined when anonymous or unprotected). */
export function triviumUser(request: FastifyRequest): TriviumIdentity | undefined {
  return (request as { user?: TriviumIdentity }).user
}

const AUTH_MODES: readonly string[] = ['public', 'optional', 'required']

function definitionOf(rules: TriviumRouteRules, method: string, url: string): EndpointDefinition {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) {
    throw new TypeError(`@trivium/auth: route ${method} ${url}: config.triviumRoute must be an object`)
  }
  const name = rules.name ?? `${method} ${url}`
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(`@trivium/auth: route ${method} ${url}: config.triviumRoute.name must be a string`)
  }
  if (rules.auth !== undefined && !AUTH_MODES.includes(rules.auth)) {
    throw new TypeError(
      `@trivium/auth: route ${method} ${url}: config.triviumRoute.auth must be one of ${AUTH_MODES.join(', ')}, got ${JSON.stringify(rules.auth)}`,
    )
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
  ;(request as { user?: TriviumIdentity | undefined }).user = call.identity
  return false
}

/**
 * Installs the guard the way @fastify/rate-limit attaches itself: an onRoute hook gives each route with
 * `config.triviumRoute` a preValidation hook of its own (before the application's preHandler hooks, so
 * they see `request.user`); every other route pays nothing. A route added before this plugin is not
 * seen here: @trivium/core refuses to start with it (register @trivium/auth before such routes).
 */
export function installRouteGuard(fastify: FastifyInstance): void {
  fastify.addHook('onRoute', function guardRoute(this: FastifyInstance, route: RouteOptions) {
    const rules = route.config?.triviumRoute
    if (rules === undefined) return
    const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
    const definition = definitionOf(rules, method, route.url)
    // Middleware scoped to a child context (child.trivium.use) applies to that context's routes too.
    fastify.trivium.pipeline.setContext(definition, this)
    fastify.trivium.guardRoute(rules, definition)
    const guard = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      runGuard(fastify, definition, request, reply).then((answered) => {
        if (!answered) done()
      }, done)
    }
    const own = route.preValidation
    route.preValidation = own === undefined ? [guard] : [guard, ...(Array.isArray(own) ? own : [own])]
  })
  // Routes added before @trivium/core: core's app-wide fallback calls this (app-wide middleware only,
  // since their context was never seen).
  const early = new WeakMap<object, EndpointDefinition>()
  fastify.trivium.setEarlyRouteGuard((rules, request, reply, done) => {
    let definition = early.get(rules)
    if (definition === undefined) {
      const options = request.routeOptions
      const method = Array.isArray(options.method) ? options.method.join(',') : String(options.method)
      definition = definitionOf(rules as TriviumRouteRules, method, options.url ?? request.url)
      early.set(rules, definition)
    }
    runGuard(fastify, definition, request, reply).then((answered) => {
      if (!answered) done()
    }, done)
  })
}
