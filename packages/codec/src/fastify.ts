// Fastify integration: the binary WireFormat and a plugin that adds it to @trivium/core. This is the
// server-side layer, so it turns the runtime's DecodeError into core's ValidationException.
import {
  type Model,
  UnsupportedMediaTypeException,
  ValidationException,
  type WireFormat,
} from '@trivium/core'
import { BINARY_CONTENT_TYPE, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { DecodeError, deriveBinaryForm, setValidationErrorFactory } from './runtime/index.js'
import { SETUP } from './setup-errors.js'

function useCoreValidationErrors(): void {
  setValidationErrorFactory((message, details) => new ValidationException(message, details))
}
useCoreValidationErrors()

/** `application/x-platform-binary`: a model's binary form. Bad bytes are a 400 ValidationException. */
export const binaryFormat: WireFormat = {
  name: 'binary',
  contentType: BINARY_CONTENT_TYPE,
  decode(model: Model, bytes: Uint8Array): unknown {
    if (!model.decode) throw new UnsupportedMediaTypeException(`${model.name} has no binary form`)
    try {
      return model.decode(bytes)
    } catch (err) {
      if (err instanceof DecodeError)
        throw new ValidationException(`Malformed binary payload: ${err.message}`)
      throw err
    }
  },
  encode(model: Model, value: unknown): Uint8Array {
    if (!model.encode) throw new UnsupportedMediaTypeException(`${model.name} has no binary form`)
    return model.encode(value)
  },
  derive(model: Model) {
    const form = deriveBinaryForm(model.jsonSchema)
    if (form === undefined) return undefined
    return {
      encode: (value: unknown) => form.encode(model.toJSON(value)),
      // The layout checks the shapes; the model's own schema still checks everything else (formats,
      // patterns, refinements), so a binary body is refused exactly as its JSON form would be.
      decode: (bytes: Uint8Array) => model.fromJSON(form.decode(bytes)),
    }
  },
}

export type TriviumCodecOptions = {}

const plugin: FastifyPluginAsync<TriviumCodecOptions> = async (fastify: FastifyInstance, options) => {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw SETUP.TRV_CODEC_OPTIONS()
  }
  // The plugin has no option of its own.
  refuseUnknownOptions('@trivium/codec', options, [])
  useCoreValidationErrors()
  if (!fastify.trivium.formats.get(binaryFormat.name)) fastify.trivium.addFormat(binaryFormat)
}

/** Adds the binary format to @trivium/core (register after it). */
export const triviumCodec = fp(plugin, {
  fastify: '^5.12.1',
  name: '@trivium/codec',
  dependencies: ['@trivium/core'],
})
