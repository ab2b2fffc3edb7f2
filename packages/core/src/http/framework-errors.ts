// HTTP errors produced below the routes (PROTOCOL.md "Errors": HTTP errors are always the JSON error
// body): Node's parser errors (`clientError`: duplicate Content-Length, unknown methods, oversized
// headers), Fastify's router errors (bad URL encoding, a path parameter over `maxParamLength`) and the
// not-found context's own errors (QUERY without Content-Type). They get the body with `code` and
// `requestId`, and the headers in `errorHeaders` (filled by @trivium/protections with the security headers).
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  PayloadTooLargeException,
  TimeoutException,
  type TriviumError,
  toErrorBody,
  ValidationException,
} from '../errors.js'
import { loggedClientErrors, sendError } from './error-reply.js'

/** Headers put on every error answered below the routes, where route hooks do not run. */
export type ErrorHeaders = Record<string, string>

function withStatus(error: TriviumError, statusCode: number): TriviumError {
  // The HTTP status keeps its precise meaning (414, 431, 408); the kind says what went wrong.
  error.statusCode = statusCode
  return error
}

function clientErrorOf(err: NodeJS.ErrnoException): TriviumError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return withStatus(new PayloadTooLargeException('Request headers are too large'), 431)
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return withStatus(new TimeoutException('Request timed out'), 408)
    case 'HPE_INVALID_METHOD':
      return new ValidationException('Unknown HTTP method')
    default:
      return new ValidationException('Malformed HTTP request')
  }
}

function frameworkErrorOf(err: { code?: string }): TriviumError | undefined {
  switch (err.code) {
    case 'FST_ERR_BAD_URL':
      return new ValidationException('The URL is not valid (bad percent-encoding)')
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return withStatus(new ValidationException('A path parameter is too long'), 414)
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE':
      return new ValidationException('A Content-Type header is required')
    default:
      return undefined
  }
}

/** The error handler of the not-found context and of Fastify's `frameworkErrors`. */
export function frameworkErrorHandler(headers: ErrorHeaders) {
  return (err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    reply.headers(headers)
    const mapped = typeof err === 'object' && err !== null ? frameworkErrorOf(err) : undefined
    return sendError(mapped ?? err, request, reply)
  }
}

let clientErrors = 0

/**
 * Node's `clientError`: no Fastify request exists, so the response is written on the socket. The
 * client's fault is logged once at `info` with Node's reason, no stack (a request it cut short is not
 * logged again as aborted).
 */
export function clientErrorHandler(headers: ErrorHeaders, log?: FastifyBaseLogger) {
  return (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const error = clientErrorOf(err)
    const requestId = `req-client-${++clientErrors}`
    if (log) {
      loggedClientErrors.add(socket)
      log.info(
        { requestId, statusCode: error.statusCode, code: error.code, reason: err.code ?? err.message },
        `request refused: ${error.message}`,
      )
    }
    if (socket.writable) {
      const body = JSON.stringify(toErrorBody(error, requestId))
      const lines = [
        `HTTP/1.1 ${error.statusCode} ${statusText(error.statusCode)}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(body)}`,
        'Connection: close',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ]
      socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`)
    }
    socket.destroy(err)
  }
}

function statusText(status: number): string {
  return status === 431
    ? 'Request Header Fields Too Large'
    : status === 408
      ? 'Request Timeout'
      : 'Bad Request'
}

// Fastify keeps its options (where `frameworkErrors` lives) under a private symbol; there is no public
// way for a plugin to set it. Found by description, and only set when the application set none.
function fastifyOptions(fastify: FastifyInstance): { frameworkErrors?: unknown } | undefined {
  for (let o: object | null = fastify; o !== null; o = Object.getPrototypeOf(o)) {
    const key = Object.getOwnPropertySymbols(o).find((s) => s.description === 'fastify.options')
    if (key) return (o as Record<symbol, { frameworkErrors?: unknown }>)[key]
  }
  return undefined
}

/**
 * Installs the handlers on the server, unless the application brought its own: a `clientErrorHandler`
 * or `frameworkErrors` given to `Fastify()` is kept.
 */
export function installFrameworkErrors(fastify: FastifyInstance, headers: ErrorHeaders): void {
  const options = fastifyOptions(fastify)
  if (options && options.frameworkErrors === undefined) {
    options.frameworkErrors = frameworkErrorHandler(headers)
  }
  const server = fastify.server
  const listeners = server.listeners('clientError')
  const fastifyDefault = listeners.find((l) => l.name === 'bound defaultClientErrorHandler')
  if (fastifyDefault) {
    server.removeListener('clientError', fastifyDefault as (...args: unknown[]) => void)
    server.on('clientError', clientErrorHandler(headers, fastify.log))
  }
}
