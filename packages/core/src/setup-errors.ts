// @trivium/core's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('@trivium/core', {
  TRV_CORE_BODY_LIMIT: {
    when: '`bodyLimit` is not a positive integer',
    message: () => 'bodyLimit must be a positive integer (bytes)',
  },
  TRV_CORE_NOT_FOUND_HANDLER: {
    when: '`notFoundHandler` is not a boolean',
    message: () => 'notFoundHandler must be a boolean',
  },
  TRV_CORE_ERROR_HANDLER: {
    when: '`errorHandler` is not a boolean',
    message: () => 'errorHandler must be a boolean',
  },
  TRV_CORE_JSON_POISONING: {
    when: "Fastify was created with `onProtoPoisoning` or `onConstructorPoisoning` other than 'error'",
    message: (key: string, value: unknown) =>
      `Fastify's ${key} must be 'error' (got '${value}'): JSON with __proto__ or constructor.prototype keys is refused on every transport (PROTOCOL.md "Decoding rules")`,
  },
  TRV_CORE_COMPRESSION: {
    when: '`compression` is not true, false or `{ threshold, encodings }` with valid values',
    message: (why: string) => `compression ${why}`,
  },
  TRV_CORE_SECRET_QUERY: {
    when: 'a secret query parameter name (log redaction) is not a non-empty string',
    message: () => 'secret query parameters must be non-empty strings',
  },
  TRV_CORE_IDEMPOTENCY_TIMING: {
    when: "idempotency's `windowMs` or `lockMs` is not a positive integer",
    message: (name: string) => `idempotency ${name} must be a positive integer (ms)`,
  },
  TRV_CORE_IDEMPOTENCY_STORE: {
    when: 'idempotency is given no store with `claim()`',
    message: () => 'idempotency needs a store (IdempotencyStore)',
  },
  TRV_CORE_MIDDLEWARE: {
    when: '`trivium.use()` is given something that is not a function',
    message: () => 'middleware must be a function',
  },
})

/** Rules every plugin applies through core's helpers: the message names the plugin that refused. */
export const SHARED_SETUP = setupErrors('', {
  TRV_SETUP_SHUTDOWN_GRACE: {
    when: '`shutdownGraceMs` (core, websocket, tcp) is not an integer of at least 1',
    message: (pkg: string, grace: unknown) =>
      `${pkg}: shutdownGraceMs must be an integer of at least 1 (got ${String(grace)})`,
  },
  TRV_SETUP_SHUTDOWN_GRACE_TIMEOUT: {
    when: "`shutdownGraceMs` is not less than Fastify's `pluginTimeout`",
    message: (pkg: string, grace: number, pluginTimeout: number) =>
      `${pkg}: shutdownGraceMs (${grace}) must be less than Fastify's pluginTimeout (${pluginTimeout}), or app.close() fails; lower it or raise pluginTimeout`,
  },
  TRV_SETUP_UNKNOWN_ENDPOINT: {
    when: "a plugin's option names an endpoint that is not registered (checked at `ready()`)",
    message: (plugin: string, option: string, name: string, hint: string) =>
      `${plugin}: ${option} names unknown endpoint "${name}"${hint}`,
  },
})
