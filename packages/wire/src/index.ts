// @trivium/wire — the error vocabulary and the frame codec shared by @trivium/websocket, @trivium/tcp and the client. Browser-safe:
// Uint8Array, DataView, TextEncoder and TextDecoder only. Layouts: PROTOCOL.md, "Frames".

export { SHORT_ASCII_BYTES, shortAscii } from './ascii.js'
export { Cancellation } from './cancellation.js'
export { FrameError, FrameErrorCode, type FrameErrorCodeValue } from './errors.js'
export {
  type CodedErrorClass,
  ConflictException,
  codedError,
  ERROR_KINDS,
  type ErrorBody,
  type ErrorKind,
  type FieldError,
  ForbiddenException,
  fromErrorBody,
  INTERNAL_ERROR_MESSAGE,
  InternalErrorException,
  isTriviumError,
  NetworkException,
  NotFoundException,
  PayloadTooLargeException,
  RateLimitExceededException,
  ServiceUnavailableException,
  TimeoutException,
  TokenExpiredException,
  TriviumError,
  type TriviumErrorOptions,
  toErrorBody,
  UnauthorizedException,
  UnprocessableContentException,
  UnsupportedMediaTypeException,
  ValidationException,
} from './errors-vocabulary.js'
export {
  DEFAULT_MAX_FRAME_BYTES,
  decodeWsFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  type FrameTypeName,
  frameTypeName,
  isKnownFrameType,
  MAX_NAME_BYTES,
} from './frame.js'
export {
  type HttpMethodName,
  type HttpRequestParts,
  type InvalidField,
  toHttpRequest,
} from './http-mapping.js'
export { decodeMetadata, encodeMetadata, MAX_METADATA_ENTRIES } from './metadata.js'
export { encodeTcpFrame, TCP_LENGTH_BYTES, TCP_MIN_LENGTH, TcpFrameReader } from './tcp.js'
