// Transport sends (errors, HTTP): every failure of an endpoint route, and every unknown route, is
// answered with the one error body of PROTOCOL.md. Unexpected errors are logged, never shown.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { normalizeError, type TriviumError, toErrorBody } from '../errors.js'
import { CALL } from './symbols.js'

export function sendError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { error, internal } = normalizeError(err)
  if (internal) request.log.error({ err, requestId: request.id }, 'unhandled error in endpoint')
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
