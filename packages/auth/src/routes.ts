// Existing Fastify routes under Trivium's rules (README "Protecting existing routes"): a route with
// `config: { triviumRoute: { auth, permissions, roles, rateLimit } }` runs the app's Trivium middleware
// chain (auth, RBAC, rate limit, …) around the route (from a preValidation hook), as around an endpoint's
// handler; the caller is `triviumUser(request)`, and `request.user` only when the application gives that
// name to Trivium (`requestUser: true`). Refusals are the one error body of PROTOCOL.md.
import {
  type GuardedRoute,
  httpCredential,
  normalizeError,
  type RouteOutcome,
  TriviumCall,
  type TriviumEndpointConfig,
  type TriviumIdentity,
  toErrorBody,
} from '@trivium/core'
import { transportOf } from '@trivium/core/internal'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { SETUP } from './setup-errors.js'

/** The rules of a protected plain route: every endpoint setting the registered plugins declare. */
export interface TriviumRouteRules extends TriviumEndpointConfig {
  /**
   * Name used by rate-limit keys and logs (default `<METHOD> <url>`, e.g. `GET /legacy`). Given, it also
   * makes the route an endpoint of that name, callable over WebSocket and TCP through the route itself
   * (PROTOCOL.md "Named routes"); it must then be an endpoint name (`orders.create`).
   */
  name?: string
}

/**
 * Opt-in typing of `request.user`, as @fastify/jwt's `FastifyJWT`: empty by default, so a service that
 * declares `FastifyRequest.user` itself (or uses @fastify/jwt) is never contradicted. With the plugin
 * option `requestUser: true` (which sets it), type the caller that `config.triviumRoute` routes get:
 * `declare module '@trivium/auth' { interface TriviumRequestUser { user: TriviumIdentity | undefined } }`.
 * Without both, read the caller with `triviumUser(request)`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the application augments it
export interface TriviumRequestUser {}

/** Where the guard keeps the caller of a protected route (`triviumUser(request)`). */
const CALLER: unique symbol = Symbol('trivium.auth.caller')

declare module 'fastify' {
  interface FastifyRequest {
    [CALLER]?: TriviumIdentity | undefined
  }
  interface FastifyContextConfig {
    /** Run this plain route through the Trivium middleware (auth, RBAC, rate limit) like an endpoint. */
    triviumRoute?: TriviumRouteRules
  }
  interface FastifyRequest extends TriviumRequestUser {}
}

/** The authenticated caller of a `config.triviumRoute` route (undefined when anonymous or unprotected). */
export function triviumUser(request: FastifyRequest): TriviumIdentity | undefined {
  return request[CALLER]
}

const AUTH_MODES: readonly string[] = ['public', 'optional', 'required']

/** Checks a route's `config.triviumRoute` (typed for the application, any value at run time). */
function guardedRoute(rules: unknown, method: string, url: string): GuardedRoute {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) {
    throw SETUP.TRV_AUTH_ROUTE_RULES(method, url)
  }
  const name = ('name' in rules ? rules.name : undefined) ?? `${method} ${url}`
  if (typeof name !== 'string' || name.length === 0) {
    throw SETUP.TRV_AUTH_ROUTE_NAME(method, url)
  }
  const auth = 'auth' in rules ? rules.auth : undefined
  if (auth !== undefined && (typeof auth !== 'string' || !AUTH_MODES.includes(auth))) {
    throw SETUP.TRV_AUTH_ROUTE_MODE(method, url, AUTH_MODES.join(', '), JSON.stringify(auth))
  }
  return { kind: 'route', name, method, url, config: rules, timeoutMs: undefined, streaming: false }
}

/** Answers a refusal (an error thrown by the chain before the route went on) with the one error body. */
function refuse(
  err: unknown,
  call: TriviumCall<unknown, GuardedRoute>,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const { error, internal } = normalizeError(err)
  if (internal) request.log.error({ err, requestId: request.id }, 'unhandled error in route middleware')
  if (call.responseHeaders) reply.headers(call.responseHeaders)
  const body = toErrorBody(error, request.id)
  if (body.retryAfter !== undefined) reply.header('retry-after', String(body.retryAfter))
  reply.code(error.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body))
}

/**
 * Runs the middleware chain around a protected route, as around an endpoint's handler: the route goes on
 * (`done()`) when the chain calls `next()`, and that `next()` resolves once Fastify has sent the route's
 * response, with its status (RouteOutcome), so observers (tracing, metrics, access logs) see the answer.
 */
function runGuard(
  fastify: FastifyInstance,
  requestUser: boolean,
  route: GuardedRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const query = request.query as Record<string, unknown>
  // A named route called by a frame (WebSocket, TCP): the call is that transport's, as an endpoint's is.
  const frame = transportOf(request)
  const call = new TriviumCall<unknown, GuardedRoute>({
    definition: route,
    protocol: frame?.protocol ?? 'http',
    requestId: request.id,
    log: request.log,
    headers: request.headers,
    method: request.method,
    query,
    clientIp: frame ? frame.clientIp : request.ip,
    raw: request,
    decodeBody: () => request.body,
    credential: frame ? () => frame.credential : () => httpCredential(request.headers, query),
    ...(frame === undefined
      ? {}
      : { metadata: frame.metadata, connection: frame.connection, onIdentity: frame.onIdentity }),
  })
  let wentOn = false
  const goOn = (): Promise<RouteOutcome> => {
    wentOn = true
    if (call.responseHeaders) reply.headers(call.responseHeaders)
    request[CALLER] = call.identity
    // Only where the application gave the name to Trivium, and never over a value a hook of its own set.
    // (`request.user` is typed by the application, TriviumRequestUser, hence the untyped write.)
    if (requestUser) {
      const own = request as { user?: unknown }
      if (own.user === undefined || own.user === null) own.user = call.identity
    }
    // 'close' is the response's last event, whether it finished or the connection went away.
    const sent = new Promise<RouteOutcome>((resolve) => {
      reply.raw.once('close', () => resolve({ statusCode: reply.statusCode }))
    })
    done()
    return sent
  }
  // A chain that returns without calling `next()` (a short-circuit) lets the route answer as before.
  const ended = () => {
    if (!wentOn) done()
  }
  const failed = (err: unknown) => {
    // After the route went on its answer is Fastify's; a step failing after it is only logged.
    if (wentOn)
      request.log.error({ err, requestId: request.id }, 'error in route middleware after the response')
    else refuse(err, call, request, reply)
  }
  try {
    Promise.resolve(fastify.trivium.pipeline.run(call, goOn)).then(ended, failed)
  } catch (err) {
    failed(err)
  }
}

/**
 * Installs the guard the way @fastify/rate-limit attaches itself: an onRoute hook gives each route with
 * `config.triviumRoute` a preValidation hook of its own (before the application's preHandler hooks, so
 * they see the caller); every other route pays nothing. A route added before this plugin is not
 * seen here: @trivium/core refuses to start with it (register @trivium/auth before such routes).
 * `requestUser`: the application gives `request.user` to Trivium; a plugin that decorates it too
 * (@fastify/jwt), in this context or the route's, is refused at start, whichever comes first.
 */
export function installRouteGuard(fastify: FastifyInstance, requestUser: boolean): void {
  // Not decorated here: @fastify/jwt registered after would then die in its own decorateRequest, where
  // this check reaches `ready()` with the fix.
  const checkOwner = (instance: FastifyInstance) => {
    if (requestUser && instance.hasRequestDecorator('user')) {
      throw new Error(
        '@trivium/auth: requestUser: true, but request.user is decorated by another plugin (@fastify/jwt?): leave requestUser off and read the caller with triviumUser(request)',
      )
    }
  }
  fastify.addHook('onReady', async () => checkOwner(fastify))
  fastify.addHook('onRoute', function guardRoute(this: FastifyInstance, route: RouteOptions) {
    const rules = route.config?.triviumRoute
    if (rules === undefined) return
    const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
    const target = guardedRoute(rules, method, route.url)
    checkOwner(this)
    // Middleware scoped to a child context (child.trivium.use) applies to that context's routes too.
    fastify.trivium.pipeline.setContext(target, this)
    fastify.trivium.guardRoute(rules, target)
    const guard = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      runGuard(fastify, requestUser, target, request, reply, done)
    }
    const own = route.preValidation
    route.preValidation = own === undefined ? [guard] : [guard, ...(Array.isArray(own) ? own : [own])]
  })
  // Routes added before @trivium/core: core's app-wide fallback calls this (app-wide middleware only,
  // since their context was never seen).
  const early = new WeakMap<object, GuardedRoute>()
  fastify.trivium.setEarlyRouteGuard((rules, request, reply, done) => {
    let target = early.get(rules)
    if (target === undefined) {
      const options = request.routeOptions
      const method = Array.isArray(options.method) ? options.method.join(',') : String(options.method)
      target = guardedRoute(rules, method, options.url ?? request.url)
      early.set(rules, target)
    }
    runGuard(fastify, requestUser, target, request, reply, done)
  })
}
