// @trivium/codec/runtime — what generated models import. Browser-safe: Uint8Array, DataView,
// TextEncoder/TextDecoder only; no Node built-ins, no @trivium/core, no @fastify/error.
export {
  asModel,
  asModels,
  eqCustom,
  hashCustom,
  jCustom,
  openBidiStream,
  openClientStream,
} from './custom.js'
export {
  DecodeError,
  EncodeError,
  type FieldError,
  ModelValidationError,
  setValidationErrorFactory,
  type ValidationErrorFactory,
  validationError,
} from './errors.js'
export { BinaryReader, DEFAULT_MAX_DEPTH, decodeMessage, type ReaderOptions } from './reader.js'
export type {
  CallOptions,
  CustomType,
  CustomValue,
  EndpointSpec,
  HttpMethod,
  JsonSchema,
  ModelClass,
  RuntimeBidiStream,
  RuntimeClient,
  RuntimeClientStream,
  RuntimeRequestStream,
} from './types.js'
export * from './values.js'
export { AnyTag, BinaryWriter, encodeMessage, FORMAT_VERSION, MAX_DATE_MS } from './writer.js'
