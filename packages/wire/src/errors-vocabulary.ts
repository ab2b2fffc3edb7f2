// The one error vocabulary of PROTOCOL.md "Errors", shared by the server (@trivium/core and the leaf
// packages) and the client. Browser-safe: plain classes, no Node or Fastify import. The classes carry the
// shape Fastify reads from a thrown error (`name`, `code`, `statusCode`, `message`).

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

/** Every error kind: its stable code and its HTTP status (the same status on every transport). */
export const ERROR_KINDS = {
  UnauthorizedException: { code: 'TRV_UNAUTHORIZED', status: 401 },
  TokenExpiredException: { code: 'TRV_TOKEN_EXPIRED', status: 401 },
  ForbiddenException: { code: 'TRV_FORBIDDEN', status: 403 },
  ValidationException: { code: 'TRV_VALIDATION', status: 400 },
  RateLimitExceededException: { code: 'TRV_RATE_LIMITED', status: 429 },
  NotFoundException: { code: 'TRV_NOT_FOUND', status: 404 },
  ConflictException: { code: 'TRV_CONFLICT', status: 409 },
  UnprocessableContentException: { code: 'TRV_UNPROCESSABLE_CONTENT', status: 422 },
  UnsupportedMediaTypeException: { code: 'TRV_UNSUPPORTED_MEDIA_TYPE', status: 415 },
  PayloadTooLargeException: { code: 'TRV_PAYLOAD_TOO_LARGE', status: 413 },
  ServiceUnavailableException: { code: 'TRV_SERVICE_UNAVAILABLE', status: 503 },
  InternalErrorException: { code: 'TRV_INTERNAL', status: 500 },
  NetworkException: { code: 'TRV_NETWORK', status: 503 },
  TimeoutException: { code: 'TRV_TIMEOUT', status: 504 },
} as const

export type ErrorKind = keyof typeof ERROR_KINDS

const KIND_BY_CODE = new Map<string, ErrorKind>(
  (Object.keys(ERROR_KINDS) as ErrorKind[]).map((kind) => [ERROR_KINDS[kind].code, kind]),
)

/** The fixed message of an unexpected server error (the original is logged, never sent). */
export const INTERNAL_ERROR_MESSAGE = 'Internal server error'

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

const CLASS_BY_KIND: Record<
  Exclude<ErrorKind, 'ValidationException' | 'RateLimitExceededException'>,
  new (
    message: string,
  ) => TriviumError
> = {
  UnauthorizedException,
  TokenExpiredException,
  ForbiddenException,
  NotFoundException,
  ConflictException,
  UnprocessableContentException,
  UnsupportedMediaTypeException,
  PayloadTooLargeException,
  ServiceUnavailableException,
  InternalErrorException,
  NetworkException,
  TimeoutException,
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

/** Rebuilds a typed error from a wire error body (any transport). */
export function fromErrorBody(body: Partial<ErrorBody> | null | undefined): TriviumError {
  const b = body ?? {}
  const message = typeof b.message === 'string' ? b.message : 'Unknown error'
  const kind = typeof b.code === 'string' ? KIND_BY_CODE.get(b.code) : undefined
  let error: TriviumError
  if (kind === 'ValidationException') {
    error = new ValidationException(message, Array.isArray(b.details) ? b.details : [])
  } else if (kind === 'RateLimitExceededException') {
    error = new RateLimitExceededException(Number(b.retryAfter ?? 0), message)
  } else if (kind !== undefined) {
    error = new CLASS_BY_KIND[kind](message)
  } else {
    // A code this version does not know: keep what the server said.
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

/** An error class of a package of its own (`TRV_<PACKAGE>_*`), not one of the vocabulary's kinds. */
export type CodedErrorClass<A extends unknown[]> = new (
  ...args: A
) => Error & { readonly code: string; readonly statusCode: number }

/**
 * Makes a named error class with a stable code (`err.name` is `name`, `err.code` is `code`). `message`
 * builds the message from the constructor's arguments; an argument `{ cause }` sets `err.cause`.
 * `Base` lets argument errors stay TypeErrors.
 */
export function codedError<A extends unknown[]>(
  name: string,
  code: string,
  statusCode: number,
  message: (...args: A) => string,
  Base: new (message: string) => Error = Error,
): CodedErrorClass<A> {
  const Named = {
    [name]: class extends Base {
      readonly code = code
      readonly statusCode = statusCode
      constructor(...args: A) {
        super(message(...args))
        this.name = name
        const last: unknown = args.at(-1)
        if (typeof last === 'object' && last !== null && 'cause' in last) {
          ;(this as { cause?: unknown }).cause = last.cause
        }
      }
    },
  }[name] as CodedErrorClass<A>
  return Named
}
