// The spec's error kinds live once in @trivium/wire (browser-safe, shared with the client and the leaf
// packages); core re-exports them and adds the server side: Fastify's own errors mapped onto the kinds,
// and anything unexpected turned into InternalErrorException. The one body on every transport:
//   { statusCode, code, error: <kind>, message, requestId?, retryAfter?, details? }
import {
  INTERNAL_ERROR_MESSAGE,
  InternalErrorException,
  isTriviumError,
  PayloadTooLargeException,
  type TriviumError,
  UnsupportedMediaTypeException,
  ValidationException,
} from '@trivium/wire/errors'

export * from '@trivium/wire/errors'

/** A request body over the limit (Fastify's own refusal, or an inflated body past it). */
export const BODY_TOO_LARGE_MESSAGE = 'Request body is too large'
/** A Content-Type no format decodes. */
export const UNSUPPORTED_CONTENT_TYPE_MESSAGE = 'Unsupported Content-Type'
/** A body that is not JSON (Fastify's parser, or a format's). */
export const INVALID_JSON_MESSAGE = 'Request body is not valid JSON'

// Fastify's own errors that are the client's fault, mapped onto our kinds so the body shape never varies.
function fromFastifyError(err: object): TriviumError | null {
  const code = 'code' in err ? err.code : undefined
  const statusCode = 'statusCode' in err ? err.statusCode : undefined
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeException(UNSUPPORTED_CONTENT_TYPE_MESSAGE)
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeException(BODY_TOO_LARGE_MESSAGE)
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ValidationException('Request body is empty')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ValidationException(INVALID_JSON_MESSAGE)
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ValidationException('Content-Length does not match the body')
    case 'FST_ERR_CTP_EMPTY_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new UnsupportedMediaTypeException(UNSUPPORTED_CONTENT_TYPE_MESSAGE)
    default:
      break
  }
  // secure-json-parse and JSON.parse raise SyntaxError with statusCode 400 set by Fastify.
  if (err instanceof SyntaxError || (statusCode === 400 && !code)) {
    return new ValidationException(INVALID_JSON_MESSAGE)
  }
  if (statusCode === 413) return new PayloadTooLargeException(BODY_TOO_LARGE_MESSAGE)
  if (statusCode === 415) return new UnsupportedMediaTypeException(UNSUPPORTED_CONTENT_TYPE_MESSAGE)
  return null
}

/**
 * Turns anything thrown into a Trivium error. Unknown errors become InternalErrorException with
 * a fixed message; `internal` is true so the caller logs the original.
 */
export function normalizeError(err: unknown): { error: TriviumError; internal: boolean } {
  if (isTriviumError(err)) return { error: err, internal: false }
  if (typeof err === 'object' && err !== null) {
    const mapped = fromFastifyError(err)
    if (mapped) return { error: mapped, internal: false }
  }
  return { error: new InternalErrorException(INTERNAL_ERROR_MESSAGE), internal: true }
}
