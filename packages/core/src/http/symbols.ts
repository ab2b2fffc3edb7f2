import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify'
import type { TriviumCall, TriviumIdentity } from '../call.js'

/**
 * Where the HTTP adapter keeps the common request form on the Fastify request (`request[CALL]`),
 * exported by @trivium/core for the packages that read it. `Symbol.for`: a second copy of core in one
 * process (two installed versions) still finds the call.
 */
export const CALL: unique symbol = Symbol.for('trivium.call')

declare module 'fastify' {
  interface FastifyRequest {
    /** The call of an endpoint request (set by @trivium/core's HTTP route). */
    [CALL]?: TriviumCall
    /** Set by a bridge that replays a frame through `app.inject()` (see TRANSPORT_OVERRIDE). */
    [TRANSPORT_OVERRIDE]?: TransportOverride
  }
}

/**
 * Set on a Fastify request by a bridge that replays a frame through `app.inject()` (the TCP bridge):
 * the HTTP route then builds the call with this protocol, metadata and client address. A property
 * keyed by a module-private Symbol cannot be set by an HTTP client (no header or body reaches it).
 */
export const TRANSPORT_OVERRIDE: unique symbol = Symbol('trivium.transportOverride')

export interface TransportOverride {
  protocol: 'websocket' | 'tcp'
  metadata?: Record<string, string>
  clientIp?: string
  connection?: Record<string, unknown>
  /** Told when authentication sets the call's identity (see CallInit.onIdentity). */
  onIdentity?: (identity: TriviumIdentity) => void
  /**
   * The frame's credential (its metadata's, else the connection's), for a named route's guard; the
   * bridge also gives it to the route as `Authorization: Bearer …`, which the app's own hooks read.
   */
  credential?: string
}

/**
 * Set by the frame transports' route bridge on the in-memory socket of a request it routes (a property
 * keyed by a module-private Symbol: no HTTP client's socket can carry it), so that a route reached by a
 * frame knows it without a hook of its own in every context.
 */
export const FRAME_TRANSPORT: unique symbol = Symbol('trivium.frameTransport')

/** The frame transport a request came from, or undefined for an HTTP client's request. */
export function transportOf(request: FastifyRequest): TransportOverride | undefined {
  const socket = request.raw.socket as { [FRAME_TRANSPORT]?: TransportOverride } | null
  return request[TRANSPORT_OVERRIDE] ?? socket?.[FRAME_TRANSPORT]
}

/**
 * Where `routeConfigOf` keeps a request's route config once read (a module-private Symbol: no HTTP client
 * can set it).
 */
const ROUTE_CONFIG: unique symbol = Symbol('trivium.routeConfig')

declare module 'fastify' {
  interface FastifyRequest {
    [ROUTE_CONFIG]: FastifyContextConfig | undefined
  }
}

/**
 * Declares the request fields core sets (`CALL`, the route config `routeConfigOf` keeps) with
 * `decorateRequest`, so that every request has them from its start: setting a field a request does not
 * have gives it a new shape per request, and every function that reads the request afterwards sees two.
 * Symbol-keyed: invisible to `Object.keys`, JSON and the application's own decorators.
 */
export function declareRequestFields(fastify: FastifyInstance): void {
  if (!fastify.hasRequestDecorator(CALL)) fastify.decorateRequest(CALL, undefined)
  if (!fastify.hasRequestDecorator(ROUTE_CONFIG)) fastify.decorateRequest(ROUTE_CONFIG, undefined)
}

/**
 * The request's route config (`request.routeOptions.config`), read once per request and kept on it: the
 * `routeOptions` getter builds a new 12-field object on each read, and core's early-route guard and
 * @trivium/protections' hooks each need the config (bench/README.md "bench/js-path").
 */
export function routeConfigOf(request: FastifyRequest): FastifyContextConfig {
  let config = request[ROUTE_CONFIG]
  if (config === undefined) {
    config = request.routeOptions.config
    request[ROUTE_CONFIG] = config
  }
  return config
}
