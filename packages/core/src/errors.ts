// The spec's error kinds, created once with @fastify/error under our own `TRV_` prefix.
// Every transport turns a thrown error into the same body (see PROTOCOL.md "Errors"):
//   { statusCode, code, error: <kind>, message, requestId?, retryAfter?, details? }
import createError from '@fastify/error'

/** One field-level problem carried by a ValidationException. */
export interface FieldError {
  field: string
  message: string
}

/** The one error body shape used on every transport (JSON on HTTP, error frame payload on WS/TCP). */
export interface ErrorBody {
  statusCode: number
  code: string
  error: ErrorKind
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

/** Base of every Trivium error: a stable `code`, an HTTP-equivalent `statusCode` and a `kind`. */
export interface TriviumError extends Error {
  code: string
  statusCode: number
  kind: ErrorKind
}

type Ctor<E> = new (message: string, extra?: any) => E

function kindError<E extends TriviumError>(kind: ErrorKind, code: string, status: number): Ctor<E> {
  const Base = createError(code, '%s', status) as unknown as new (message: string) => TriviumError
  // A named subclass so stack traces and `err.name` say what the spec calls the error.
  const Named = {
    [kind]: class extends Base {
      constructor(message: string) {
        super(message)
        this.name = kind
        this.kind = kind
      }
    },
  }[kind] as unknown as Ctor<E>
  return Named
}

export const UnauthorizedException = kindError<TriviumError>('UnauthorizedException', 'TRV_UNAUTHORIZED', 401)
export type UnauthorizedException = TriviumError

export const TokenExpiredException = kindError<TriviumError>(
  'TokenExpiredException',
  'TRV_TOKEN_EXPIRED',
  401,
)
export type TokenExpiredException = TriviumError

export const ForbiddenException = kindError<TriviumError>('ForbiddenException', 'TRV_FORBIDDEN', 403)
export type ForbiddenException = TriviumError

export const NotFoundException = kindError<TriviumError>('NotFoundException', 'TRV_NOT_FOUND', 404)
export type NotFoundException = TriviumError

export const UnsupportedMediaTypeException = kindError<TriviumError>(
  'UnsupportedMediaTypeException',
  'TRV_UNSUPPORTED_MEDIA_TYPE',
  415,
)
export type UnsupportedMediaTypeException = TriviumError

export const PayloadTooLargeException = kindError<TriviumError>(
  'PayloadTooLargeException',
  'TRV_PAYLOAD_TOO_LARGE',
  413,
)
export type PayloadTooLargeException = TriviumError

export const ServiceUnavailableException = kindError<TriviumError>(
  'ServiceUnavailableException',
  'TRV_SERVICE_UNAVAILABLE',
  503,
)
export type ServiceUnavailableException = TriviumError

/** Client-side: the connection failed or was lost. */
export const NetworkException = kindError<TriviumError>('NetworkException', 'TRV_NETWORK', 503)
export type NetworkException = TriviumError

/** Client-side: the call did not complete in time. */
export const TimeoutException = kindError<TriviumError>('TimeoutException', 'TRV_TIMEOUT', 504)
export type TimeoutException = TriviumError

export interface ValidationException extends TriviumError {
  details: FieldError[]
}
const ValidationBase = kindError<ValidationException>('ValidationException', 'TRV_VALIDATION', 400)
/** Input failed a check. `details` names the fields (empty when the check is not about one field). */
export const ValidationException = class ValidationException extends ValidationBase {
  constructor(message: string, details: FieldError[] = []) {
    super(message)
    this.details = details
  }
} as unknown as new (
  message: string,
  details?: FieldError[],
) => ValidationException

export interface RateLimitExceededException extends TriviumError {
  retryAfter: number
}
const RateLimitBase = kindError<RateLimitExceededException>(
  'RateLimitExceededException',
  'TRV_RATE_LIMITED',
  429,
)
/** The client is over its limit; `retryAfter` is whole seconds until the window ends. */
export const RateLimitExceededException = class RateLimitExceededException extends RateLimitBase {
  constructor(retryAfter: number, message = `Rate limit exceeded. Try again in ${retryAfter} seconds`) {
    super(message)
    this.retryAfter = retryAfter
  }
} as unknown as new (
  retryAfter: number,
  message?: string,
) => RateLimitExceededException

/** Anything unexpected. Its message never reaches a client; the cause is logged with the request id. */
export const InternalErrorException = kindError<TriviumError>('InternalErrorException', 'TRV_INTERNAL', 500)
export type InternalErrorException = TriviumError

export const INTERNAL_ERROR_MESSAGE = 'Internal server error'

const KIND_BY_CODE: Record<string, ErrorKind> = {
  TRV_UNAUTHORIZED: 'UnauthorizedException',
  TRV_TOKEN_EXPIRED: 'TokenExpiredException',
  TRV_FORBIDDEN: 'ForbiddenException',
  TRV_VALIDATION: 'ValidationException',
  TRV_RATE_LIMITED: 'RateLimitExceededException',
  TRV_NOT_FOUND: 'NotFoundException',
  TRV_UNSUPPORTED_MEDIA_TYPE: 'UnsupportedMediaTypeException',
  TRV_PAYLOAD_TOO_LARGE: 'PayloadTooLargeException',
  TRV_SERVICE_UNAVAILABLE: 'ServiceUnavailableException',
  TRV_INTERNAL: 'InternalErrorException',
  TRV_NETWORK: 'NetworkException',
  TRV_TIMEOUT: 'TimeoutException',
}

/** True for errors created by this module (works across duplicated copies of the package). */
export function isTriviumError(err: unknown): err is TriviumError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as TriviumError).code === 'string' &&
    (err as TriviumError).code in KIND_BY_CODE
  )
}

// Fastify's own errors that are the client's fault, mapped onto our kinds so the body shape never varies.
function fromFastifyError(err: {
  code?: string
  statusCode?: number
  message?: string
}): TriviumError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeException('Unsupported Content-Type')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeException('Request body is too large')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ValidationException('Request body is empty')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ValidationException('Request body is not valid JSON')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ValidationException('Content-Length does not match the body')
    case 'FST_ERR_CTP_EMPTY_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new UnsupportedMediaTypeException('Unsupported Content-Type')
    default:
      break
  }
  // secure-json-parse and JSON.parse raise SyntaxError with statusCode 400 set by Fastify.
  if (err instanceof SyntaxError || (err.statusCode === 400 && !err.code)) {
    return new ValidationException('Request body is not valid JSON')
  }
  if (err.statusCode === 413) return new PayloadTooLargeException('Request body is too large')
  if (err.statusCode === 415) return new UnsupportedMediaTypeException('Unsupported Content-Type')
  return null
}

/**
 * Turns anything thrown into a Trivium error. Unknown errors become InternalErrorException with
 * a fixed message; `internal` is true so the caller logs the original.
 */
export function normalizeError(err: unknown): { error: TriviumError; internal: boolean } {
  if (isTriviumError(err)) return { error: err, internal: false }
  if (typeof err === 'object' && err !== null) {
    const mapped = fromFastifyError(err as { code?: string; statusCode?: number })
    if (mapped) return { error: mapped, internal: false }
  }
  return { error: new InternalErrorException(INTERNAL_ERROR_MESSAGE), internal: true }
}

/** The wire body for an error; the same object on HTTP, WebSocket and TCP. */
export function toErrorBody(error: TriviumError, requestId?: string): ErrorBody {
  const body: ErrorBody = {
    statusCode: error.statusCode,
    code: error.code,
    error: KIND_BY_CODE[error.code] ?? 'InternalErrorException',
    message: error.message,
  }
  if (requestId !== undefined) body.requestId = requestId
  const retryAfter = (error as RateLimitExceededException).retryAfter
  if (typeof retryAfter === 'number') body.retryAfter = retryAfter
  const details = (error as ValidationException).details
  if (Array.isArray(details) && details.length > 0) body.details = details
  return body
}

/** Rebuilds a typed error from a wire body (used by clients on every transport). */
export function fromErrorBody(body: Partial<ErrorBody>): TriviumError {
  const message = typeof body.message === 'string' ? body.message : 'Unknown error'
  switch (body.code) {
    case 'TRV_UNAUTHORIZED':
      return new UnauthorizedException(message)
    case 'TRV_TOKEN_EXPIRED':
      return new TokenExpiredException(message)
    case 'TRV_FORBIDDEN':
      return new ForbiddenException(message)
    case 'TRV_VALIDATION':
      return new ValidationException(message, Array.isArray(body.details) ? body.details : [])
    case 'TRV_RATE_LIMITED':
      return new RateLimitExceededException(Number(body.retryAfter ?? 0), message)
    case 'TRV_NOT_FOUND':
      return new NotFoundException(message)
    case 'TRV_UNSUPPORTED_MEDIA_TYPE':
      return new UnsupportedMediaTypeException(message)
    case 'TRV_PAYLOAD_TOO_LARGE':
      return new PayloadTooLargeException(message)
    case 'TRV_SERVICE_UNAVAILABLE':
      return new ServiceUnavailableException(message)
    case 'TRV_TIMEOUT':
      return new TimeoutException(message)
    case 'TRV_NETWORK':
      return new NetworkException(message)
    default:
      return new InternalErrorException(message)
  }
}
