// Core's side of plain-route guarding (README "Protecting existing routes"): which plain routes carry
// `config.triviumRoute`, which of them a guard claimed (route-guard/guard.ts, installed by @trivium/auth),
// the fail-closed fallback for routes added before @trivium/core, and the check at `ready()` that every
// such route is guarded and every rule it declares is enforced.
import type { FastifyInstance } from 'fastify'
import { checkSettings, EndpointSettingsError } from '../endpoint-settings.js'
import { INTERNAL_ERROR_MESSAGE, InternalErrorException } from '../errors.js'
import { replyWithError } from '../http/error-reply.js'
import { type ErrorHeaders, frameworkErrorHandler } from '../http/framework-errors.js'
import type { Pipeline } from '../middleware.js'
import { addNamedRoute } from '../named-route.js'
import type { EndpointRegistry, GuardedRoute } from '../registry.js'
import type { EarlyRouteGuard } from './guard.js'

export class PlainRoutes {
  // Plain routes with `config.triviumRoute` seen after core, and the guard's definition of each.
  readonly #seen: { label: string; rules: unknown }[] = []
  readonly #guarded = new Map<unknown, GuardedRoute>()
  #earlyGuard: EarlyRouteGuard | undefined

  constructor(
    fastify: FastifyInstance,
    registry: EndpointRegistry,
    pipeline: Pipeline,
    errorHeaders: ErrorHeaders,
  ) {
    this.#guardEarlyRoutes(fastify, errorHeaders)
    this.#watchRoutes(fastify, registry, pipeline, errorHeaders)
  }

  /** A guard enforces `rules` (the route's `config.triviumRoute`) by running the pipeline for `route`. */
  guard(rules: object, route: GuardedRoute): void {
    this.#guarded.set(rules, route)
  }

  /** The guard of the routes added before core (see #guardEarlyRoutes). */
  setEarlyGuard(guard: EarlyRouteGuard): void {
    this.#earlyGuard = guard
  }

  /** At `ready()`: every plain route with the option has a guard, which enforces each rule it declares. */
  check(pipeline: Pipeline, anywhere: ReadonlySet<string>): void {
    for (const { label, rules } of this.#seen) {
      const definition = this.#guarded.get(rules)
      if (definition === undefined) {
        throw new EndpointSettingsError(
          `${label} has config.triviumRoute, but no route guard enforces it: register @trivium/auth before the route (in its context or an ancestor)`,
        )
      }
      const target = { label, settings: definition.config, ownKeys: ['name'], defaults: { auth: 'required' } }
      checkSettings(target, pipeline.enforcedFor(definition), anywhere)
    }
  }

  // Routes added before this plugin cannot be seen by onRoute, and Fastify has no public listing of
  // them. So an app-wide preHandler reads each request's route config
  // (request.routeOptions, public) and guards (or refuses) those with the option that onRoute never saw.
  #guardEarlyRoutes(fastify: FastifyInstance, errorHeaders: ErrorHeaders): void {
    const guarded = this.#guarded
    fastify.addHook('preHandler', (request, reply, done) => {
      const config = request.routeOptions.config
      const rules: unknown = 'triviumRoute' in config ? config.triviumRoute : undefined
      if (rules === undefined || guarded.has(rules)) return done()
      const earlyGuard = this.#earlyGuard
      if (typeof rules === 'object' && rules !== null && earlyGuard !== undefined) {
        return earlyGuard(rules, request, reply, done)
      }
      // Fail closed: a server fault (its rule cannot be enforced), named in the log, not to the client.
      request.log.error(
        { route: request.routeOptions.url },
        '@trivium/core: a route added before @trivium/core has config.triviumRoute but no route guard runs: register @trivium/auth',
      )
      reply.headers(errorHeaders)
      replyWithError(new InternalErrorException(INTERNAL_ERROR_MESSAGE), request, reply)
    })
  }

  // Opted-in routes answer their errors in the Trivium body, with an error handler of their own (a
  // route's own `errorHandler` is kept); every other route keeps its context's (the application's).
  #watchRoutes(
    fastify: FastifyInstance,
    registry: EndpointRegistry,
    pipeline: Pipeline,
    errorHeaders: ErrorHeaders,
  ): void {
    const routeErrorHandler = frameworkErrorHandler(errorHeaders)
    const seen = this.#seen
    fastify.addHook('onRoute', function seeRoute(this: FastifyInstance, route) {
      // The option's type is declared by @trivium/auth; core only needs to see that it is there.
      const config = route.config
      const rules: unknown =
        config !== undefined && 'triviumRoute' in config ? config.triviumRoute : undefined
      if (rules === undefined) return
      const method = Array.isArray(route.method) ? route.method.join(',') : String(route.method)
      seen.push({ label: `route ${method} ${route.url}`, rules })
      route.errorHandler ??= routeErrorHandler
      // A name makes the route an endpoint too (named-route.ts). Fastify's own HEAD twin of a GET route
      // carries the same config: the GET route is the endpoint.
      if (typeof rules !== 'object' || rules === null || !('name' in rules) || method === 'HEAD') return
      if (typeof rules.name === 'string') {
        pipeline.setContext(addNamedRoute(registry, route, rules.name, rules), this)
      }
    })
  }
}
