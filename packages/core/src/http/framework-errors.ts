// HTTP errors produced below the routes (PROTOCOL.md "Errors": HTTP errors are always the JSON error
// body): Node's parser errors (`clientError`: duplicate Content-Length, unknown methods, oversized
// headers), an HTTP/1.1 request without Host, Fastify's router errors (bad URL encoding, a path parameter
// over `maxParamLength`), the not-found context's own errors (QUERY without Content-Type) and the errors
// of routes that are not endpoints (plugins' own routes: static files answering 403, 412, 416). They get
// the body with `code` and `requestId`, and the headers in `errorHeaders` (filled by
// @trivium/protections with the security headers).
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ForbiddenException,
  NotFoundException,
  normalizeError,
  PayloadTooLargeException,
  ServiceUnavailableException,
  TimeoutException,
  type TriviumError,
  toErrorBody,
  UnauthorizedException,
  UnsupportedMediaTypeException,
  ValidationException,
} from '../errors.js'
import { loggedClientErrors, sendError } from './error-reply.js'
import { SHUTDOWN_MESSAGE } from './sse.js'

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
    case 'FST_STATIC_FORBIDDEN_PATH': // @fastify/static: `..`, a NUL byte (nothing is read)
      return new ForbiddenException('The path leads outside the static files')
    default:
      return undefined
  }
}

// Any other 4xx of a route that is not an endpoint keeps its status and gets the kind of that status;
// the message is the status text, never the error's own (a plugin's message may name a file).
function clientFaultOf(status: unknown): TriviumError | undefined {
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 499)
    return undefined
  const message = STATUS_CODES[status] ?? 'Bad Request'
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
    default:
      return withStatus(new ValidationException(message), status)
  }
}

function errorOf(err: unknown, reply: FastifyReply): unknown {
  if (typeof err !== 'object' || err === null) return err
  const framework = frameworkErrorOf(err)
  if (framework) return framework
  const { error, internal } = normalizeError(err)
  if (!internal) return error
  const { statusCode, headers } = err as { statusCode?: unknown; headers?: unknown }
  const fault = clientFaultOf(statusCode)
  if (fault === undefined) return err
  // What the status needs (Content-Range of a 416, Allow of a 405), as Fastify's own handler sets them.
  if (typeof headers === 'object' && headers !== null) reply.headers(headers as Record<string, string>)
  return fault
}

/**
 * The error handler of the root context (routes that are not endpoints), of the not-found context and
 * of Fastify's `frameworkErrors`.
 */
export function frameworkErrorHandler(headers: ErrorHeaders) {
  return (err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    reply.headers(headers)
    return sendError(errorOf(err, reply), request, reply)
  }
}

let clientErrors = 0

/** The body of an error answered before Fastify has a request (so with an id of its own). */
function clientErrorBody(error: TriviumError): string {
  return JSON.stringify(toErrorBody(error, `req-client-${++clientErrors}`))
}

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

/** The refusal of a request without Host (also of a WebSocket upgrade, which Node routes apart). */
export const MISSING_HOST = 'HTTP/1.1 requests must have a Host header'
const EXPECTATION = 'Only "Expect: 100-continue" is supported'

/** An error answered on Node's response, before Fastify has a request; HTTP/1 connections then close. */
function writeError(
  req: IncomingMessage,
  res: ServerResponse,
  error: TriviumError,
  headers: ErrorHeaders,
): void {
  const body = clientErrorBody(error)
  res.writeHead(error.statusCode, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    // HTTP/2 forbids connection headers
    ...(req.httpVersionMajor === 1 ? { connection: 'close' } : {}),
  })
  res.end(body)
}

/**
 * Whether a request lacks the Host every HTTP/1.1 request needs (RFC 9112 §3.2): only HTTP/1.0 may omit
 * it (a bogus `HTTP/2.0` request line over HTTP/1 may not); real HTTP/2 carries `:authority` instead.
 */
export function hostMissing(req: IncomingMessage): boolean {
  return (
    req.headers.host === undefined && req.headers[':authority'] === undefined && req.httpVersion !== '1.0'
  )
}

/**
 * What Node or Fastify would otherwise answer before any hook, with a bare body and none of the headers:
 * - a request without Host (`hostMissing`). Node refuses an HTTP/1.1 one itself with an empty 400
 *   unless the server was created with `Fastify({ http: { requireHostHeader: false } })`: then it
 *   reaches the server's request listener, Fastify's handler, which this wraps;
 * - a request arriving while the server closes (Fastify's own 503 body otherwise);
 * - an `Expect` other than 100-continue (Node's empty 417 otherwise).
 */
function refuseBeforeFastify(fastify: FastifyInstance, server: Server, headers: ErrorHeaders): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    writeError(req, res, withStatus(new ValidationException(EXPECTATION), 417), headers)
  })
  const listeners = server.listeners('request')
  const fastifyHandler = listeners[0] as ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  if (fastifyHandler === undefined || listeners.length !== 1) return
  let closing = false
  fastify.addHook('preClose', (done) => {
    closing = true
    done()
  })
  server.removeListener('request', fastifyHandler)
  server.on('request', function refuseEarly(this: Server, req: IncomingMessage, res: ServerResponse) {
    if (closing) writeError(req, res, new ServiceUnavailableException(SHUTDOWN_MESSAGE), headers)
    else if (hostMissing(req)) writeError(req, res, new ValidationException(MISSING_HOST), headers)
    else fastifyHandler.call(this, req, res)
  })
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
  refuseBeforeFastify(fastify, server as Server, headers)
}
