// Transport sends (errors, HTTP): every failure of an endpoint route, and every unknown route, is
// answered with the one error body of PROTOCOL.md. Server faults are logged at `error` with their
// stack, never shown; a client's faults are logged once at `info`, without a stack (PROTOCOL.md "Errors").
import type { Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { normalizeError, type TriviumError, toErrorBody, ValidationException } from '../errors.js'
import { errorWithStatus } from './status-errors.js'
import { CALL } from './symbols.js'

/** Sockets whose malformed request the clientError handler already logged (not logged twice). */
export const loggedClientErrors = new WeakSet<Socket>()

/**
 * The body could not be read because the connection ended before the whole request arrived (closed,
 * reset, cut by Node's parser: Node's `aborted`, ECONNRESET; a cancelled bridged call: AbortError).
 */
function aborted(err: unknown, request: FastifyRequest): boolean {
  const { code, name } = (err ?? {}) as { code?: unknown; name?: unknown }
  return (code === 'ECONNRESET' || name === 'AbortError') && request.raw.destroyed && !request.raw.complete
}

export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  let { error, internal } = normalizeError(err)
  if (internal && aborted(err, request)) {
    // The body stream failed because the client went away: nobody reads this answer.
    if (!loggedClientErrors.has(request.raw.socket)) {
      request.log.info({ requestId: request.id }, 'request aborted by the client')
    }
    return replyWithError(
      new ValidationException('Request aborted before its body was received'),
      request,
      reply,
    )
  }
  if (internal && !request[CALL] && typeof err === 'object' && err !== null) {
    // Before the endpoint ran (a hook: @fastify/rate-limit's 429, an app's 403), or on a route that is
    // not an endpoint: an error that says its status keeps it, in the error body.
    const own = errorWithStatus(err, reply)
    if (own !== undefined) {
      error = own
      internal = own.statusCode >= 500 && own.statusCode !== 503
    }
  }
  if (internal) {
    request.log.error({ err, requestId: request.id }, 'unhandled error in endpoint')
  } else if (!request[CALL]) {
    // Refused before the endpoint ran (URL, framing, body): no access log saw it. Inside an endpoint,
    // refusals are the application's to log (the demo's access log).
    request.log.info(
      { requestId: request.id, statusCode: error.statusCode, code: error.code },
      `request refused: ${error.message}`,
    )
  }
  return replyWithError(error, request, reply)
}

export function replyWithError(
  error: TriviumError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const call = request[CALL]
  if (call?.responseHeaders) reply.headers(call.responseHeaders)
  const body = toErrorBody(error, request.id)
  if (body.retryAfter !== undefined) reply.header('retry-after', String(body.retryAfter))
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body))
}
