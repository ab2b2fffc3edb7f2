// The upgrade route's checks (PROTOCOL.md "WebSocket"): every refusal is the JSON error body, in the
// documented order, before the socket is handed to ws.
import {
  ForbiddenException,
  normalizeError,
  toErrorBody,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { hostMissing, jsonFormat, MISSING_HOST, ORIGIN_NOT_ALLOWED } from '@trivium/core/internal'
import type { ConnectionIdentity, FrameServer } from '@trivium/frame-session'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResolvedOptions } from './options.js'

export { ORIGIN_NOT_ALLOWED }
export const UPGRADE_REQUIRED = 'This route only accepts a WebSocket upgrade (GET with Upgrade: websocket)'
export const BAD_HANDSHAKE =
  'Invalid WebSocket handshake: Sec-WebSocket-Key must be 16 base64 bytes and Sec-WebSocket-Version 13'

const KEY = /^[+/0-9A-Za-z]{22}==$/

export function sendUpgradeError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { error, internal } = normalizeError(err)
  if (internal) request.log.error({ err }, 'websocket upgrade failed')
  // A refused upgrade's socket is closed after the answer (@fastify/websocket): say so to the client.
  if (request.headers.upgrade !== undefined) reply.header('connection', 'close')
  return reply
    .code(error.statusCode)
    .type('application/json; charset=utf-8')
    .send(toErrorBody(error, request.id))
}

/** Default Origin rule: no Origin (not a browser), or the page is served by this host. */
function sameHost(origin: string, request: FastifyRequest): boolean {
  try {
    return new URL(origin).host === request.headers.host
  } catch {
    return false
  }
}

/** What the checks learned about an accepted upgrade, for the connection. */
export type Upgrades = WeakMap<
  FastifyRequest,
  { format: WireFormat; identity?: ConnectionIdentity; metadata?: boolean }
>

export function upgradeCheck(
  fastify: FastifyInstance,
  server: FrameServer,
  options: ResolvedOptions,
  upgrades: Upgrades,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined> {
  const allowOrigin = options.allowOrigin ?? sameHost
  return async function checkUpgrade(
    request: FastifyRequest,
    reply: FastifyReply,
  ): Promise<FastifyReply | undefined> {
    if (String(request.headers.upgrade).toLowerCase() !== 'websocket') return undefined // handler answers
    const refusal = server.refusal(request.ip)
    if (refusal) return sendUpgradeError(refusal, request, reply)
    // Node's Host check (or core's) never sees an upgrade: Node hands it to the 'upgrade' listeners.
    if (hostMissing(request.raw)) {
      return sendUpgradeError(new ValidationException(MISSING_HOST), request, reply)
    }
    const origin = request.headers.origin
    if (origin !== undefined && !allowOrigin(origin, request)) {
      return sendUpgradeError(new ForbiddenException(ORIGIN_NOT_ALLOWED), request, reply)
    }
    const key = request.headers['sec-websocket-key']
    const version = request.headers['sec-websocket-version']
    if (typeof key !== 'string' || !KEY.test(key) || (version !== '13' && version !== '8')) {
      return sendUpgradeError(new ValidationException(BAD_HANDSHAKE), request, reply)
    }
    const query = request.query as Record<string, unknown>
    const requested = query.format
    let format: WireFormat | undefined
    if (requested === undefined) format = fastify.trivium.formats.get('binary') ?? jsonFormat
    else if (typeof requested === 'string') format = fastify.trivium.formats.get(requested)
    if (!format) {
      const shown = Array.isArray(requested) ? requested.join(',') : String(requested)
      return sendUpgradeError(
        new UnsupportedMediaTypeException(`Unsupported format: ${shown}`),
        request,
        reply,
      )
    }
    // `metadata=1`: every REQUEST payload starts with a metadata block, as on TCP (PROTOCOL.md "WebSocket").
    const metadata = query.metadata
    if (metadata !== undefined && metadata !== '1') {
      return sendUpgradeError(
        new ValidationException('Invalid metadata query parameter: the only value is 1'),
        request,
        reply,
      )
    }
    let identity: ConnectionIdentity | undefined
    if (options.identify) {
      try {
        identity = (await options.identify(request)) ?? undefined
      } catch (err) {
        return sendUpgradeError(err, request, reply)
      }
    }
    upgrades.set(request, {
      format,
      ...(identity ? { identity } : {}),
      ...(metadata ? { metadata: true } : {}),
    })
    return undefined
  }
}
