// The client's error classes: the same names, codes, statuses and kinds as @trivium/core's errors.ts
// (PROTOCOL.md "Errors"), but without @fastify/error so this file runs in browsers. Every transport
// rebuilds them from the wire error body with `fromErrorBody`.

/** One field-level problem carried by a ValidationException. */
export interface FieldError {
  field: string
  message: string
}

/** The error body of PROTOCOL.md "Errors": JSON on HTTP, the payload of an ERROR frame on WS/TCP. */
export interface ErrorBody {
  statusCode: number
  code: string
  error: string
  message: string
  requestId?: string
  retryAfter?: number
  details?: FieldError[]
}

export type ErrorKind =
  | 'UnauthorizedException'
  | 'TokenExpiredException'
  | 'ForbiddenException'
  | 'ValidationException'
  | 'RateLimitExceededException'
  | 'NotFoundException'
  | 'UnsupportedMediaTypeException'
  | 'PayloadTooLargeException'
  | 'ServiceUnavailableException'
  | 'InternalErrorException'
  | 'NetworkException'
  | 'TimeoutException'

/**
 * Base of every error the client raises. Also the generic error for a body whose code this
 * version does not know: `code`, `statusCode` and `kind` are then copied from the body.
 */
export class TriviumError extends Error {
  code: string
  statusCode: number
  kind: string
  /** The server's request id (`requestId` of the error body), when the error came from the server. */
  requestId?: string

  constructor(message: string, code = 'TRV_INTERNAL', statusCode = 500, kind = 'InternalErrorException') {
    super(message)
    this.name = kind
    this.code = code
    this.statusCode = statusCode
    this.kind = kind
  }
}

export class UnauthorizedException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_UNAUTHORIZED', 401, 'UnauthorizedException')
  }
}

export class TokenExpiredException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_TOKEN_EXPIRED', 401, 'TokenExpiredException')
  }
}

export class ForbiddenException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_FORBIDDEN', 403, 'ForbiddenException')
  }
}

export class ValidationException extends TriviumError {
  details: FieldError[]
  constructor(message: string, details: FieldError[] = []) {
    super(message, 'TRV_VALIDATION', 400, 'ValidationException')
    this.details = details
  }
}

export class RateLimitExceededException extends TriviumError {
  /** Whole seconds until the client may try again. */
  retryAfter: number
  constructor(retryAfter: number, message = `Rate limit exceeded. Try again in ${retryAfter} seconds`) {
    super(message, 'TRV_RATE_LIMITED', 429, 'RateLimitExceededException')
    this.retryAfter = retryAfter
  }
}

export class NotFoundException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_NOT_FOUND', 404, 'NotFoundException')
  }
}

export class UnsupportedMediaTypeException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_UNSUPPORTED_MEDIA_TYPE', 415, 'UnsupportedMediaTypeException')
  }
}

export class PayloadTooLargeException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_PAYLOAD_TOO_LARGE', 413, 'PayloadTooLargeException')
  }
}

export class ServiceUnavailableException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_SERVICE_UNAVAILABLE', 503, 'ServiceUnavailableException')
  }
}

export class InternalErrorException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_INTERNAL', 500, 'InternalErrorException')
  }
}

/** Client side: the connection failed or was lost, or the server sent data the client cannot read. */
export class NetworkException extends TriviumError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'TRV_NETWORK', 503, 'NetworkException')
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause
  }
}

/** Client side: the call did not complete in time. */
export class TimeoutException extends TriviumError {
  constructor(message: string) {
    super(message, 'TRV_TIMEOUT', 504, 'TimeoutException')
  }
}

const KNOWN_CODES = new Set([
  'TRV_UNAUTHORIZED',
  'TRV_TOKEN_EXPIRED',
  'TRV_FORBIDDEN',
  'TRV_VALIDATION',
  'TRV_RATE_LIMITED',
  'TRV_NOT_FOUND',
  'TRV_UNSUPPORTED_MEDIA_TYPE',
  'TRV_PAYLOAD_TOO_LARGE',
  'TRV_SERVICE_UNAVAILABLE',
  'TRV_INTERNAL',
  'TRV_NETWORK',
  'TRV_TIMEOUT',
])

/** Rebuilds a typed error from a wire error body (any transport). */
export function fromErrorBody(body: Partial<ErrorBody> | null | undefined): TriviumError {
  const b = body ?? {}
  const message = typeof b.message === 'string' ? b.message : 'Unknown error'
  let error: TriviumError
  switch (b.code) {
    case 'TRV_UNAUTHORIZED':
      error = new UnauthorizedException(message)
      break
    case 'TRV_TOKEN_EXPIRED':
      error = new TokenExpiredException(message)
      break
    case 'TRV_FORBIDDEN':
      error = new ForbiddenException(message)
      break
    case 'TRV_VALIDATION':
      error = new ValidationException(message, Array.isArray(b.details) ? b.details : [])
      break
    case 'TRV_RATE_LIMITED':
      error = new RateLimitExceededException(Number(b.retryAfter ?? 0), message)
      break
    case 'TRV_NOT_FOUND':
      error = new NotFoundException(message)
      break
    case 'TRV_UNSUPPORTED_MEDIA_TYPE':
      error = new UnsupportedMediaTypeException(message)
      break
    case 'TRV_PAYLOAD_TOO_LARGE':
      error = new PayloadTooLargeException(message)
      break
    case 'TRV_SERVICE_UNAVAILABLE':
      error = new ServiceUnavailableException(message)
      break
    case 'TRV_TIMEOUT':
      error = new TimeoutException(message)
      break
    case 'TRV_NETWORK':
      error = new NetworkException(message)
      break
    case 'TRV_INTERNAL':
      error = new InternalErrorException(message)
      break
    default:
      // A code this client does not know: keep what the server said.
      error = new TriviumError(
        message,
        typeof b.code === 'string' ? b.code : 'TRV_INTERNAL',
        typeof b.statusCode === 'number' ? b.statusCode : 500,
        typeof b.error === 'string' ? b.error : 'InternalErrorException',
      )
  }
  if (typeof b.requestId === 'string') error.requestId = b.requestId
  return error
}

/** True for an error with a Trivium code (this package's classes, or @trivium/core's). */
export function isTriviumError(err: unknown): err is TriviumError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as TriviumError).code === 'string' &&
    KNOWN_CODES.has((err as TriviumError).code)
  )
}

/**
 * Errors raised locally by a model (e.g. @trivium/core's jsonSchemaModel throws core's
 * ValidationException) become this package's classes, so `instanceof` works on every path.
 * Anything else is returned unchanged.
 */
export function toClientError(err: unknown): unknown {
  if (err instanceof TriviumError) return err
  if (isTriviumError(err)) {
    return fromErrorBody(err as unknown as Partial<ErrorBody>)
  }
  return err
}
