// Existing Fastify routes under Trivium's rules (README "Protecting existing routes"): a route with
// `config: { triviumRoute: { auth, permissions, roles, rateLimit } }` runs the app's Trivium middleware
// chain (auth, RBAC, rate limit, …) around the route, as around an endpoint's handler. The guard that
// runs the chain is core's (`guardPlainRoutes`); auth installs it and owns what is auth's: the rules a
// route may declare, and the caller, `triviumUser(request)`, and `request.user` only when the
// application gives that name to Trivium (`requestUser: true`).
import type { GuardedRoute, TriviumEndpointConfig, TriviumIdentity } from '@trivium/core'
import { guardPlainRoutes } from '@trivium/core/internal'
import type { FastifyInstance, FastifyRequest as HostRequest } from 'fastify'
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
export function triviumUser(request: HostRequest): TriviumIdentity | undefined {
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

/**
 * Installs core's guard of plain routes (`guardPlainRoutes`) with auth's part: the rules a route may
 * declare, and the caller it publishes (`triviumUser(request)`, and `request.user` with `requestUser`).
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
  guardPlainRoutes(fastify, {
    describe: guardedRoute,
    seeContext: checkOwner,
    wentOn(request, identity) {
      request[CALLER] = identity
      // Only where the application gave the name to Trivium, and never over a value a hook of its own set.
      // (`request.user` is typed by the application, TriviumRequestUser, hence the untyped write.)
      if (requestUser) {
        const own = request as { user?: unknown }
        if (own.user === undefined || own.user === null) own.user = identity
      }
    },
  })
}
