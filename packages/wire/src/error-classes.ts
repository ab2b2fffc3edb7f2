// The error classes of PROTOCOL.md "Errors", thrown by the servers and rebuilt by the client: every package's
// main entry re-exports this module whole (`@trivium/wire/error-classes`), so a new class is added here once.
// Browser-safe: plain classes, no Node or Fastify import. The classes carry the shape Fastify reads from a thrown
// error (`name`, `code`, `statusCode`, `message`).
import { ERROR_KINDS, type ErrorKind, KIND_BY_CODE } from './error-kinds.js'

/** One field-level problem carried by a ValidationException. */
export interface FieldError {
  field: string
  message: string
}

/** The error body: JSON on HTTP, the payload of an ERROR frame on WebSocket and TCP. */
export interface ErrorBody {
  statusCode: number
  code: string
  error: string
  message: string
  requestId?: string
  retryAfter?: number
  details?: FieldError[]
}

export interface TriviumErrorOptions {
  cause?: unknown
}

function spec(kind: ErrorKind): [code: string, statusCode: number, kind: string] {
  return [ERROR_KINDS[kind].code, ERROR_KINDS[kind].status, kind]
}

/**
 * Base of every Trivium error. Also the generic error for a body whose code this version does not
 * know: `code`, `statusCode` and `kind` are then copied from the body.
 */
export class TriviumError extends Error {
  code: string
  statusCode: number
  kind: string
  /** The server's request id (`requestId` of the error body), when the error came from the server. */
  requestId?: string

  constructor(
    message: string,
    code = 'TRV_INTERNAL',
    statusCode = 500,
    kind = 'InternalErrorException',
    options?: TriviumErrorOptions,
  ) {
    super(message)
    this.name = kind
    this.code = code
    this.statusCode = statusCode
    this.kind = kind
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause
  }

  /** `Name [CODE]: message`, as @fastify/error prints its errors. */
  override toString(): string {
    return `${this.name} [${this.code}]: ${this.message}`
  }
}

export class UnauthorizedException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('UnauthorizedException'), options)
  }
}

export class TokenExpiredException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('TokenExpiredException'), options)
  }
}

export class ForbiddenException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('ForbiddenException'), options)
  }
}

/** Input failed a check. `details` names the fields (empty when the check is not about one field). */
export class ValidationException extends TriviumError {
  details: FieldError[]
  constructor(message: string, details: FieldError[] = [], options?: TriviumErrorOptions) {
    super(message, ...spec('ValidationException'), options)
    this.details = details
  }
}

/** The client is over its limit; `retryAfter` is whole seconds until the window ends. */
export class RateLimitExceededException extends TriviumError {
  retryAfter: number
  constructor(retryAfter: number, message = `Rate limit exceeded. Try again in ${retryAfter} seconds`) {
    super(message, ...spec('RateLimitExceededException'))
    this.retryAfter = retryAfter
  }
}

export class NotFoundException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('NotFoundException'), options)
  }
}

/** The request conflicts with what is stored (a name that already exists) or with one still being
 * processed (the same idempotency key, in flight). */
export class ConflictException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('ConflictException'), options)
  }
}

/** Well-formed but cannot be processed as sent (e.g. an idempotency key reused with another body). */
export class UnprocessableContentException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('UnprocessableContentException'), options)
  }
}

export class UnsupportedMediaTypeException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('UnsupportedMediaTypeException'), options)
  }
}

export class PayloadTooLargeException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('PayloadTooLargeException'), options)
  }
}

export class ServiceUnavailableException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('ServiceUnavailableException'), options)
  }
}

/** Anything unexpected. Its message never reaches a client; the cause is logged with the request id. */
export class InternalErrorException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('InternalErrorException'), options)
  }
}

/** Client side: the connection failed or was lost, or the server sent data the client cannot read. */
export class NetworkException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('NetworkException'), options)
  }
}

/** Client side: the call did not complete in time. */
export class TimeoutException extends TriviumError {
  constructor(message: string, options?: TriviumErrorOptions) {
    super(message, ...spec('TimeoutException'), options)
  }
}

/**
 * True for an error whose code is one of the vocabulary's (works across duplicated copies of the
 * package). A package's own coded error (`TRV_CRYPTO_*`, …) is not: servers answer it as an internal error.
 */
export function isTriviumError(err: unknown): err is TriviumError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as TriviumError).code === 'string' &&
    KIND_BY_CODE.has((err as TriviumError).code)
  )
}

/** The wire body for an error; the same object on HTTP, WebSocket and TCP. */
export function toErrorBody(error: TriviumError, requestId?: string): ErrorBody {
  const body: ErrorBody = {
    statusCode: error.statusCode,
    code: error.code,
    error: KIND_BY_CODE.get(error.code) ?? 'InternalErrorException',
    message: error.message,
  }
  if (requestId !== undefined) body.requestId = requestId
  const retryAfter = (error as RateLimitExceededException).retryAfter
  if (typeof retryAfter === 'number') body.retryAfter = retryAfter
  const details = (error as ValidationException).details
  if (Array.isArray(details) && details.length > 0) body.details = details
  return body
}
