// The error kinds of PROTOCOL.md "Errors": each kind's stable code and HTTP status, the one table a new kind is
// added to (with its class in error-classes.ts).

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

export const KIND_BY_CODE = new Map<string, ErrorKind>(
  (Object.keys(ERROR_KINDS) as ErrorKind[]).map((kind) => [ERROR_KINDS[kind].code, kind]),
)
