import type { FastifyRequest } from 'fastify'
import type { IdentityListener, TriviumCall } from '../call.js'

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
  onIdentity?: IdentityListener
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
