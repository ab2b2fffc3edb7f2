// `@trivium/core/internal`: building blocks for Trivium's own transports, middleware packages and tests;
// not a stable API (a user's service needs only `@trivium/core`).
export type { CallInit, HeaderMap } from './call.js'
export { CREDENTIAL_METADATA_KEY, REPEATED_CREDENTIAL } from './credential.js'
export { handlerSettled } from './deadline.js'
export { checkEndpointNames, closestEndpointName, closestName } from './endpoint-names.js'
export { enforcedSettings, enforcesSettings } from './endpoint-settings.js'
export {
  type CodedErrorClass,
  codedError,
  ERROR_KINDS,
  type ErrorKind,
  fromErrorBody,
  INTERNAL_ERROR_MESSAGE,
} from './errors.js'
export {
  BINARY_CONTENT_TYPE,
  checkParsedJson,
  decodePayload,
  decodeRequest,
  decodeUtf8,
  FormatRegistry,
  INVALID_JSON_MESSAGE,
  JSON_CONTENT_TYPE,
  jsonFormat,
  LONE_SURROGATE_MESSAGE,
  parseJson,
} from './formats.js'
export { HTTP_CODINGS, ZSTD_AVAILABLE } from './http/compression.js'
export {
  type ErrorHeaders,
  hostMissing,
  MISSING_FACTORY_OPTIONS,
  MISSING_HOST,
} from './http/framework-errors.js'
export { SHUTDOWN_MESSAGE } from './http/sse.js'
export { CALL, TRANSPORT_OVERRIDE, type TransportOverride } from './http/symbols.js'
export { HttpMapping, type HttpRequestParts } from './http-mapping.js'
export {
  DEFAULT_IDEMPOTENCY_LOCK_MS,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_METADATA,
  idempotencyKeyOf,
} from './idempotency.js'
export { encodePayload, type InvokeInit, type InvokeResult, type StartedCall } from './invoke.js'
export { REDACTED, redactUrl, SECRET_QUERY_PARAMETERS, type SerializedRequest } from './log-redaction.js'
export { Pipeline } from './middleware.js'
export {
  ENDPOINT_NAME_PATTERN,
  EndpointRegistry,
  HTTP_METHODS,
  MAX_ENDPOINT_NAME_BYTES,
  MAX_TIMEOUT_MS,
} from './registry.js'
export type { EarlyRouteGuard } from './route-guard.js'
export { defaultShutdownGrace, resolveShutdownGrace } from './shutdown-grace.js'
export { STOPPED, StreamStop } from './stream-stop.js'
export { isThenable } from './thenable.js'
export { atExpiry, TOKEN_EXPIRED_MESSAGE } from './token-expiry.js'
