// HTTP errors produced below the routes (PROTOCOL.md "Errors": HTTP errors are always the JSON error
// body): Node's parser errors (`clientError`: duplicate Content-Length, unknown methods, oversized
// headers), an HTTP/1.1 request without Host, Fastify's router errors (bad URL encoding, a path parameter
// over `maxParamLength`), the not-found context's own errors (QUERY without Content-Type) and the errors
// of routes that are not endpoints (plugins' own routes: static files answering 403, 412, 416). They get
// the body with `code` and `requestId`, and the headers in `errorHeaders` (filled by
// @trivium/protections with the security headers).
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ForbiddenException,
  PayloadTooLargeException,
  ServiceUnavailableException,
  TimeoutException,
  type TriviumError,
  toErrorBody,
  ValidationException,
} from '../errors.js'
import { loggedClientErrors, sendError } from './error-reply.js'
import { SHUTDOWN_MESSAGE } from './sse.js'
import { withStatus } from './status-errors.js'

/** Node's own request timeout (a 408, before the call's deadline applies). */
export const REQUEST_TIMED_OUT_MESSAGE = 'Request timed out'

/** Headers put on every error answered below the routes, where route hooks do not run. */
export type ErrorHeaders = Record<string, string>

function clientErrorOf(err: NodeJS.ErrnoException): TriviumError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return withStatus(new PayloadTooLargeException('Request headers are too large'), 431)
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return withStatus(new TimeoutException(REQUEST_TIMED_OUT_MESSAGE), 408)
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
    case 'FST_ERR_VALIDATION': // a route's schema: Fastify's message names the field
      return new ValidationException((err as { message?: string }).message ?? 'Bad Request')
    case 'FST_STATIC_FORBIDDEN_PATH': // @fastify/static: `..`, a NUL byte (nothing is read)
      return new ForbiddenException('The path leads outside the static files')
    default:
      return undefined
  }
}

function errorOf(err: unknown): unknown {
  if (typeof err !== 'object' || err === null) return err
  // Anything else keeps its own (a Trivium error) or its status (sendError, status-errors.ts).
  return frameworkErrorOf(err) ?? err
}

/**
 * The error handler of the root context (routes that are not endpoints), and so of the not-found
 * context, and of Fastify's `frameworkErrors`.
 */
export function frameworkErrorHandler(headers: ErrorHeaders) {
  return (err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    reply.headers(headers)
    return sendError(errorOf(err), request, reply)
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
function writeClientError(headers: ErrorHeaders, log?: FastifyBaseLogger) {
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
// Node's public listener API, on the one request listener Fastify adds (its documented `serverFactory`
// gets the same handler, but would mean re-creating Fastify's choice of http/https/http2 server).
function refuseBeforeFastify(fastify: FastifyInstance, server: Server, headers: ErrorHeaders): void {
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    writeError(req, res, withStatus(new ValidationException(EXPECTATION), 417), headers)
  })
  const listeners = server.listeners('request')
  const fastifyHandler = listeners[0] as ((req: IncomingMessage, res: ServerResponse) => void) | undefined
  if (fastifyHandler === undefined || listeners.length !== 1) {
    // Which of several listeners is Fastify's is not knowable publicly: leave them all, and say so.
    fastify.log.warn(requestListenersKept(listeners.length))
    return
  }
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

/** Logged (warn) at registration when the server does not have exactly one `request` listener. */
export function requestListenersKept(count: number): string {
  return `@trivium/core: the server has ${count} 'request' listeners (Fastify's alone was expected, e.g. a serverFactory added its own), so they are left as they are: a request without Host and a request arriving while the server closes get Node's or Fastify's own answer, not the Trivium error body`
}

const NO_HEADERS: ErrorHeaders = Object.freeze({}) as ErrorHeaders

/** The error headers of the app (filled by @trivium/protections), read when an error is answered. */
function headersOf(fastify: FastifyInstance): ErrorHeaders {
  return fastify.hasDecorator('trivium') ? fastify.trivium.errorHeaders : NO_HEADERS
}

// Fastify lists no option of its own, so at ready() core emits a synthetic `clientError` on the server
// (with ECONNRESET, the code Node's and Fastify's documented handlers ignore, on a destroyed socket): the
// handler of `triviumFactoryOptions()` records that it saw it, so core knows whether the app passed them.
const probes = new WeakSet<object>()
const answered = new WeakSet<object>()

/** Options for Fastify's factory (documented in its Server reference), as `TriviumFactoryOptions`. */
export interface TriviumFactoryOptions {
  frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => void
  clientErrorHandler: (this: FastifyInstance, error: Error, socket: Socket) => void
}

/**
 * What to pass to `Fastify()` so the errors answered below the routes get the Trivium error body and
 * the error headers: `Fastify({ ...triviumFactoryOptions(), logger: true })`. Without them Node's
 * client errors and Fastify's router errors get Fastify's own bodies, and core warns at ready().
 */
export function triviumFactoryOptions(): TriviumFactoryOptions {
  return {
    frameworkErrors(error, request, reply) {
      frameworkErrorHandler(headersOf(request.server))(error, request, reply)
    },
    clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket) {
      if (probes.has(error)) {
        answered.add(error)
        return
      }
      writeClientError(headersOf(this), this.log)(error, socket)
    },
  }
}

export const MISSING_FACTORY_OPTIONS =
  "@trivium/core: Fastify was created without Trivium's factory options, so Node's client errors (malformed request lines, oversized headers) and Fastify's router errors (bad URL encoding, too long path parameters) get Fastify's own bodies, without the error format and the error headers: create it with Fastify({ ...triviumFactoryOptions(), ...yourOptions }) (exported by @trivium/core)"

/** Whether the server's `clientError` listener is the one of `triviumFactoryOptions()`. */
function hasFactoryOptions(server: Server): boolean {
  const probe = Object.assign(new Error('@trivium/core: factory options probe'), { code: 'ECONNRESET' })
  probes.add(probe)
  // A destroyed socket that swallows its errors: a handler of the app's that writes anyway does nothing.
  const socket = new Socket()
  socket.on('error', () => {})
  socket.destroy()
  server.emit('clientError', probe, socket)
  return answered.has(probe)
}

/**
 * Wraps the server's request listener (see `refuseBeforeFastify`) and, at ready(), warns once when the
 * application did not pass `triviumFactoryOptions()` to `Fastify()`.
 */
export function installFrameworkErrors(fastify: FastifyInstance, headers: ErrorHeaders): void {
  const server = fastify.server as Server
  fastify.addHook('onReady', function warnWithoutFactoryOptions(done) {
    if (!hasFactoryOptions(server)) fastify.log.warn(MISSING_FACTORY_OPTIONS)
    done()
  })
  refuseBeforeFastify(fastify, server, headers)
}
