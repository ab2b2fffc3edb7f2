// An error that is not a Trivium error but says its HTTP status — Fastify's convention, which its own
// handler follows: `error.status` or `error.statusCode`, else the status a hook set on the reply
// (@fastify/auth's `reply.code(401)` then an error without one) — answered in the Trivium body with that
// status kept. Used for the hooks of endpoints (@fastify/rate-limit's 429, an app's 403, under-pressure's
// 503) and for the routes whose errors Trivium answers (opted-in routes, the root handler when asked).
import { STATUS_CODES } from 'node:http'
import type { FastifyReply } from 'fastify'
import {
  ForbiddenException,
  INTERNAL_ERROR_MESSAGE,
  InternalErrorException,
  NotFoundException,
  PayloadTooLargeException,
  RateLimitExceededException,
  ServiceUnavailableException,
  TimeoutException,
  type TriviumError,
  UnauthorizedException,
  UnsupportedMediaTypeException,
  ValidationException,
} from '../errors.js'

export function withStatus(error: TriviumError, statusCode: number): TriviumError {
  // The HTTP status keeps its precise meaning (414, 431, 408, 502); the kind says what went wrong.
  error.statusCode = statusCode
  return error
}

function httpStatus(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599
    ? value
    : undefined
}

/** The status an error asks for, as Fastify's own error handler reads it (undefined: none). */
export function statusOf(err: object, reply: FastifyReply): number | undefined {
  const { status, statusCode } = err as { status?: unknown; statusCode?: unknown }
  return httpStatus(status) ?? httpStatus(statusCode) ?? httpStatus(reply.statusCode)
}

/** Whole seconds of a `Retry-After` the reply already carries (set by @fastify/rate-limit). */
function retryAfterOf(reply: Pick<FastifyReply, 'getHeader'>): number {
  const value = Number(reply.getHeader('retry-after'))
  return Number.isInteger(value) && value >= 0 ? value : 1
}

/**
 * The Trivium error for a status. The message is the status text, never the error's own (a plugin's
 * message may name a file or an internal); a 5xx other than 503 is `Internal server error`.
 */
export function errorOfStatus(status: number, reply: Pick<FastifyReply, 'getHeader'>): TriviumError {
  const message = STATUS_CODES[status] ?? (status < 500 ? 'Bad Request' : INTERNAL_ERROR_MESSAGE)
  switch (status) {
    case 401:
      return new UnauthorizedException(message)
    case 403:
      return new ForbiddenException(message)
    case 404:
      return new NotFoundException(message)
    case 408:
      return withStatus(new TimeoutException(message), 408)
    case 413:
      return new PayloadTooLargeException(message)
    case 415:
      return new UnsupportedMediaTypeException(message)
    case 429:
      return new RateLimitExceededException(retryAfterOf(reply), message)
    case 503:
      return new ServiceUnavailableException(message)
    default:
      return status < 500
        ? withStatus(new ValidationException(message), status)
        : withStatus(new InternalErrorException(INTERNAL_ERROR_MESSAGE), status)
  }
}

/**
 * `err` as a Trivium error of its own status, with the headers it carries (Content-Range of a 416,
 * Allow of a 405, as Fastify's handler sets them); undefined when it says no status.
 */
export function errorWithStatus(err: object, reply: FastifyReply): TriviumError | undefined {
  const status = statusOf(err, reply)
  if (status === undefined) return undefined
  const { headers } = err as { headers?: unknown }
  if (typeof headers === 'object' && headers !== null) reply.headers(headers as Record<string, string>)
  return errorOfStatus(status, reply)
}
