// @trivium/codec — schema-driven models and the binary wire format.
//   runtime (browser-safe):  @trivium/codec/runtime   BinaryWriter, BinaryReader, DecodeError, ...
//   generator:               @trivium/codec/generator generate(), SchemaError; CLI `trivium-codegen`
//   Fastify integration:     this entry               binaryFormat, triviumCodec
export { binaryFormat, type TriviumCodecOptions, triviumCodec, triviumCodec as default } from './fastify.js'
export * from './generator/index.js'
export * from './runtime/index.js'
