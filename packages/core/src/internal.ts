// `@trivium/core/internal`: building blocks for Trivium's own transports, middleware packages and tests;
// not a stable API (a user's service needs only `@trivium/core`).

export {
  invalidTimeoutMessage,
  optionNames,
  refuseUnknownOptions,
  SetupError,
  type SetupErrorRow,
  setupErrors,
  TIMEOUT_HEADER,
  UNKNOWN_OPTION,
} from '@trivium/wire'
export {
  type CallInit,
  defaultCredential,
  fillContext,
  type HeaderMap,
  type IdentityListener,
} from './call.js'
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
  requestListenersKept,
} from './http/framework-errors.js'
/** The HTTP/2 SETTINGS and session limits `triviumHttp2Options()` applies (PROTOCOL.md "HTTP/2"). */
export { HTTP2_LIMITS, HTTP2_SETTINGS } from './http/http2.js'
export { ORIGIN_NOT_ALLOWED } from './http/origin.js'
export { SHUTDOWN_MESSAGE } from './http/sse.js'
export { errorOfStatus } from './http/status-errors.js'
export {
  CALL,
  FRAME_TRANSPORT,
  TRANSPORT_OVERRIDE,
  type TransportOverride,
  transportOf,
} from './http/symbols.js'
export { HttpMapping, type HttpRequestParts } from './http-mapping.js'
export {
  DEFAULT_IDEMPOTENCY_LOCK_MS,
  DEFAULT_IDEMPOTENCY_WINDOW_MS,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_METADATA,
  idempotencyKeyOf,
} from './idempotency/middleware.js'
export { encodePayload, type InvokeInit, type InvokeResult, type StartedCall } from './invoke.js'
export { REDACTED, redactUrl, SECRET_QUERY_PARAMETERS, type SerializedRequest } from './log-redaction.js'
export { Pipeline } from './middleware.js'
export { isModel, resolveModel } from './models/resolve.js'
export {
  isStandardSchema,
  issuesError,
  offeredJsonSchema,
  type StandardSchemaModelOptions,
  standardSchemaModel,
} from './models/standard-schema.js'
export type { StandardJSONSchemaConverter } from './models/standard-schema-spec.js'
export { isNamedRoute, NamedRouteError, namedRouteStream } from './named-route.js'
export {
  ENDPOINT_NAME_PATTERN,
  EndpointRegistry,
  HTTP_METHODS,
  MAX_ENDPOINT_NAME_BYTES,
  MAX_TIMEOUT_MS,
} from './registry.js'
export { type InboxFlow, itemCost, RequestInbox } from './request-inbox.js'
export { type EarlyRouteGuard, guardPlainRoutes, type RouteGuardOwner } from './route-guard/guard.js'
export { SETUP as CORE_SETUP, SHARED_SETUP } from './setup-errors.js'
export { defaultShutdownGrace, resolveShutdownGrace } from './shutdown-grace.js'
export { STOPPED, StreamStop } from './stream-stop.js'
export { isThenable } from './thenable.js'
export { atExpiry, cancelExpiry, type Expiring, expireAt, TOKEN_EXPIRED_MESSAGE } from './token-expiry.js'
