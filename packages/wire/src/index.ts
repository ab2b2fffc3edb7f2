// @trivium/wire — the error vocabulary and the frame codec shared by @trivium/websocket, @trivium/tcp and the client. Browser-safe:
// Uint8Array, DataView, TextEncoder and TextDecoder only. Layouts: PROTOCOL.md, "Frames".

export { SHORT_ASCII_BYTES, shortAscii } from './ascii.js'
export { Cancellation } from './cancellation.js'
export { compressBody, DEFAULT_COMPRESSION_THRESHOLD, inflateReceived } from './compression.js'
export { BINARY_CONTENT_TYPE, JSON_CONTENT_TYPE } from './content-types.js'
export {
  deadlineExceededMessage,
  invalidTimeoutMessage,
  MAX_TIMEOUT_MS,
  parseTimeoutMs,
  TIMEOUT_HEADER,
  TIMEOUT_METADATA_KEY,
} from './deadline.js'
export {
  ENVELOPE_END,
  ENVELOPE_HEADER_BYTES,
  ENVELOPE_ITEM,
  EnvelopeError,
  EnvelopeReader,
  encodeEnvelope,
  STREAM_CONTENT_TYPE_PREFIX,
} from './envelope.js'
export { FrameError, FrameErrorCode, type FrameErrorCodeValue, MALFORMED_FRAME_MESSAGE } from './errors.js'
export * from './errors-vocabulary.js'
export {
  CREDIT_BYTES,
  DEFAULT_MAX_FRAME_BYTES,
  decodeWsFrame,
  encodeCredit,
  encodeWsFrame,
  encodeWsFrameBody,
  FRAME_COMPRESSED,
  type Frame,
  FrameType,
  type FrameTypeName,
  frameBody,
  frameTypeName,
  type Inflate,
  inflateFrame,
  isKnownFrameType,
  MAX_NAME_BYTES,
  readCredit,
} from './frame.js'
export {
  type HttpMethodName,
  type HttpRequestParts,
  type InvalidField,
  toHttpRequest,
} from './http-mapping.js'
export { JSON_TOO_DEEP_MESSAGE, MAX_JSON_DEPTH, nestsDeeperThan } from './json-depth.js'
export {
  CREDENTIAL_METADATA_KEY,
  decodeMetadata,
  encodeMetadata,
  FORMAT_METADATA_KEY,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_METADATA,
  MAX_METADATA_ENTRIES,
  TRACEPARENT_METADATA_KEY,
} from './metadata.js'
export {
  closestName,
  didYouMean,
  FASTIFY_REGISTER_OPTIONS,
  optionNames,
  refuseUnknownOptions,
  SetupError,
  type SetupErrorRow,
  type SetupErrorTable,
  setupErrors,
  UNKNOWN_OPTION,
} from './setup-errors.js'
export {
  encodeTcpFrame,
  encodeTcpFrameBody,
  TCP_LENGTH_BYTES,
  TCP_MIN_LENGTH,
  TcpFrameReader,
} from './tcp.js'
