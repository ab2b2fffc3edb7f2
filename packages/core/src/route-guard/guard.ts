// The guard of plain routes (README "Protecting existing routes"): a route with `config.triviumRoute`
// runs the app's Trivium middleware chain (auth, RBAC, rate limit, …) around the route, from a
// preValidation hook, as around an endpoint's handler. Core holds the guard; its owner (@trivium/auth)
// installs it and says what a route's rules may be and where the authenticated caller goes.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { type CallInit, TriviumCall, type TriviumIdentity } from '../call.js'
import { httpCredential } from '../credential.js'
import { normalizeError, toErrorBody } from '../errors.js'
import { type TransportOverride, transportOf } from '../http/symbols.js'
import type { GuardedRoute, RouteOutcome } from '../registry.js'
import { isThenable } from '../thenable.js'

/** Guards one request to a route added before @trivium/core: `done()` to go on, or answer the reply. */
export type EarlyRouteGuard = (
  rules: object,
  request: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
) => void

/** What the owner of the guard (@trivium/auth) decides; the running of the chain is core's. */
export interface RouteGuardOwner {
  /**
   * Checks a route's `config.triviumRoute` (any value at run time) and describes the route, with that
   * very object as its `config`; throws a setup error for rules it refuses.
   */
  describe(rules: unknown, method: string, url: string): GuardedRoute
  /** Each context a guarded route is added in, before the route is guarded (throws to refuse it). */
  seeContext(instance: FastifyInstance): void
  /** The chain let the route go on: `identity` is the caller it authenticated (undefined: anonymous). */
  wentOn(request: FastifyRequest, identity: TriviumIdentity | undefined): void
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

/** The call of a guarded request: the frame's transport (a named route called by a frame) or HTTP's. */
function routeCall(
  route: GuardedRoute,
  request: FastifyRequest,
  frame: TransportOverride | undefined,
): TriviumCall<unknown, GuardedRoute> {
  const query = request.query as Record<string, unknown>
  const init: CallInit<unknown, GuardedRoute> = {
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
  }
  if (frame !== undefined) {
    init.metadata = frame.metadata
    init.connection = frame.connection
    init.onIdentity = frame.onIdentity
  }
  return new TriviumCall(init)
}

/**
 * Runs the middleware chain around a protected route, as around an endpoint's handler: the route goes on
 * (`done()`) when the chain calls `next()`, and that `next()` resolves once Fastify has sent the route's
 * response, with its status (RouteOutcome), so observers (tracing, metrics, access logs) see the answer.
 * A chain of direct middleware only (auth, rate limit, … : none reads what `next()` resolves to) gets
 * `undefined` at once instead: no promise and no `close` listener per request for a value nobody reads.
 */
function runGuard(
  fastify: FastifyInstance,
  owner: RouteGuardOwner,
  route: GuardedRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  // A named route called by a frame (WebSocket, TCP): the call is that transport's, as an endpoint's is.
  const call = routeCall(route, request, transportOf(request))
  const pipeline = fastify.trivium.pipeline
  let wentOn = false
  const goOn = (): Promise<RouteOutcome> | undefined => {
    wentOn = true
    if (call.responseHeaders) reply.headers(call.responseHeaders)
    owner.wentOn(request, call.identity)
    if (!pipeline.observes(route)) {
      done()
      return undefined
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
    const result = pipeline.run(call, goOn)
    if (isThenable(result)) result.then(ended, failed)
    else ended()
  } catch (err) {
    failed(err)
  }
}

/**
 * Installs the guard the way @fastify/rate-limit attaches itself: an onRoute hook gives each route with
 * `config.triviumRoute` a preValidation hook of its own (before the application's preHandler hooks, so
 * they see the caller); every other route pays nothing. A route added before `fastify` got this guard is
 * not seen here: core's app-wide fallback (plain-routes.ts) runs it for routes added before core, and
 * refuses to start with the others (register the guard's owner before such routes).
 */
export function guardPlainRoutes(fastify: FastifyInstance, owner: RouteGuardOwner): void {
  fastify.addHook('onRoute', function guardRoute(this: FastifyInstance, route: RouteOptions) {
    // The option's type is declared by the owner (@trivium/auth); core only needs to see that it is there.
    const config = route.config
    const rules: unknown = config !== undefined && 'triviumRoute' in config ? config.triviumRoute : undefined
    if (rules === undefined) return
    const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
    const target = owner.describe(rules, method, route.url)
    owner.seeContext(this)
    // Middleware scoped to a child context (child.trivium.use) applies to that context's routes too.
    fastify.trivium.pipeline.setContext(target, this)
    // `target.config` is the route's `config.triviumRoute` itself (describe refuses any other value).
    fastify.trivium.guardRoute(target.config, target)
    const guard = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      runGuard(fastify, owner, target, request, reply, done)
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
      target = owner.describe(rules, method, options.url ?? request.url)
      early.set(rules, target)
    }
    runGuard(fastify, owner, target, request, reply, done)
  })
}
