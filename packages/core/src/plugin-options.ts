// @trivium/core's plugin options: their types, their checks at registration, and the JSON rule the
// application's Fastify must follow (PROTOCOL.md "Decoding rules").
import { optionNames, refuseUnknownOptions } from '@trivium/wire'
import type { FastifyInstance } from 'fastify'
import {
  type HttpCompressionOptions,
  type ResolvedHttpCompression,
  resolveHttpCompression,
} from './http/compression.js'
import { SETUP } from './setup-errors.js'
import { resolveShutdownGrace } from './shutdown-grace.js'

export interface TriviumCoreOptions {
  /**
   * Answer unknown routes with the Trivium error body (NotFoundException `Route GET /x not found`).
   * Default false: a guest leaves the application's 404 (Fastify's, or its own `setNotFoundHandler`) as
   * it was. An application that owns its whole app (the demo) sets true.
   */
  notFoundHandler?: boolean
  /**
   * Answer the errors of the whole application in the Trivium error body: the root error handler (the
   * errors of routes that are not endpoints, and of the not-found context) and the refusals Node and
   * Fastify answer before any route (a missing Host, an unsupported Expect, a request arriving while the
   * server closes). Default false: a guest leaves every route that is not its own to the application's
   * error handler (or Fastify's). Endpoints and routes with `config.triviumRoute` always answer in the
   * Trivium body. Refused at registration when the context already has an error handler of the
   * application's (`setErrorHandler`).
   */
  errorHandler?: boolean
  /**
   * How long `app.close()` waits for HTTP unary calls in flight before aborting them (`call.signal`)
   * and answering 503 `Server is shutting down` (default: 3 s, at most 30% of Fastify's
   * `pluginTimeout`; the same default as the frame transports' `shutdownGraceMs`).
   */
  shutdownGraceMs?: number
  /** Largest request body accepted on endpoint routes, in bytes (default 1 MiB). */
  bodyLimit?: number
  /**
   * Compress endpoint responses for clients whose Accept-Encoding accepts it (PROTOCOL.md
   * "Compression"): `true`, or `{ threshold, encodings }`. Default off. Compressed request bodies are
   * read whatever this says (the body limit applies to their inflated size).
   */
  compression?: boolean | HttpCompressionOptions
}

export type ResolvedCoreOptions = Required<Omit<TriviumCoreOptions, 'compression'>> & {
  compression: ResolvedHttpCompression | undefined
}

const DEFAULT_BODY_LIMIT = 1024 * 1024

const CORE_OPTIONS = optionNames<TriviumCoreOptions>()(
  'notFoundHandler',
  'errorHandler',
  'shutdownGraceMs',
  'bodyLimit',
  'compression',
)

export function validateOptions(options: TriviumCoreOptions, pluginTimeout: number): ResolvedCoreOptions {
  refuseUnknownOptions('@trivium/core', options, CORE_OPTIONS)
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  if (!Number.isInteger(bodyLimit) || bodyLimit <= 0) {
    throw SETUP.TRV_CORE_BODY_LIMIT()
  }
  // A guest's defaults: the application's own routes, errors and 404 stay as they were.
  const notFoundHandler = options.notFoundHandler ?? false
  if (typeof notFoundHandler !== 'boolean') throw SETUP.TRV_CORE_NOT_FOUND_HANDLER()
  const errorHandler = options.errorHandler ?? false
  if (typeof errorHandler !== 'boolean') throw SETUP.TRV_CORE_ERROR_HANDLER()
  return {
    bodyLimit,
    notFoundHandler,
    errorHandler,
    shutdownGraceMs: resolveShutdownGrace('@trivium/core', options.shutdownGraceMs, pluginTimeout),
    compression: resolveHttpCompression(options.compression),
  }
}

// PROTOCOL.md "Decoding rules": one JSON rule on every transport. HTTP bodies go through Fastify's
// parser, which follows the rule only with its default poisoning options.
export function checkJsonRule(fastify: FastifyInstance): void {
  for (const key of ['onProtoPoisoning', 'onConstructorPoisoning'] as const) {
    const value = fastify.initialConfig[key]
    if (value !== undefined && value !== 'error') {
      throw SETUP.TRV_CORE_JSON_POISONING(key, value)
    }
  }
}
