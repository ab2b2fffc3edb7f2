// Idempotency keys (IETF draft-ietf-httpapi-idempotency-key-header): a client that retries a
// non-idempotent call sends the same key, and the server answers the retry with the first answer
// instead of running the call again. Opt-in per endpoint (`idempotencyKey: true`); the key travels in
// the `Idempotency-Key` header (HTTP) or the `idempotency_key` frame metadata (WebSocket, TCP).
// Records are kept per caller + endpoint + key in a store shared by every instance (store.ts), for a
// window. This file: the key a call carries, the request's fingerprint, and the middleware.
import { createHash } from 'node:crypto'
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_METADATA } from '@trivium/wire'
import type { TriviumCall } from '../call.js'
import { enforcesSettings } from '../endpoint-settings.js'
import { ConflictException, UnprocessableContentException, ValidationException } from '../errors.js'
import { directMiddleware, type Middleware } from '../middleware.js'
import { isEndpointCall } from '../registry.js'
import { SETUP } from '../setup-errors.js'
import type { IdempotencyStore } from './store.js'

export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_METADATA }
/** How long a completed answer is replayed (24 h). */
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/** How long a claim whose call never finished (its instance died) blocks the key (60 s). */
export const DEFAULT_IDEMPOTENCY_LOCK_MS = 60 * 1000
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

export interface IdempotencyOptions {
  store: IdempotencyStore
  /** How long an answer is replayed, in ms (default 24 h). */
  windowMs?: number
  /** How long an unfinished claim blocks its key, in ms (default 60 s). */
  lockMs?: number
}

/** JSON with object keys sorted, so equal bodies give equal fingerprints whatever the key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** The key a call carries, or undefined; a malformed key is a 400. */
export function idempotencyKeyOf(call: TriviumCall<unknown>): string | undefined {
  let raw: unknown
  let where: string
  if (call.protocol === 'http') {
    raw = call.headers[IDEMPOTENCY_KEY_HEADER]
    where = 'Idempotency-Key header'
  } else {
    raw = call.metadata[IDEMPOTENCY_KEY_METADATA]
    where = `${IDEMPOTENCY_KEY_METADATA} metadata`
  }
  if (raw === undefined) return undefined
  // The draft's form is a Structured Field string ("…"); a bare token is accepted too.
  const key = typeof raw === 'string' && /^".*"$/.test(raw) ? raw.slice(1, -1) : raw
  if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
    throw new ValidationException(
      `Invalid ${where}: must be given once, 1 to 255 visible ASCII characters (e.g. a UUID)`,
      [{ field: IDEMPOTENCY_KEY_HEADER, message: 'must be 1 to 255 visible ASCII characters' }],
    )
  }
  return key
}

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback
  if (!Number.isSafeInteger(v) || v < 1) throw SETUP.TRV_CORE_IDEMPOTENCY_TIMING(name)
  return v
}

/**
 * The middleware: register after authentication (the key is per caller). Endpoints opt in with
 * `idempotencyKey: true`; a call without a key runs as usual. Same key + same body within the window:
 * the first answer (same status and body, header `Idempotent-Replayed: true` on HTTP); same key + another
 * body: 422; same key while the first call runs: 409. A call that fails releases its key (nothing was
 * written: a handler commits its write as its last step), so its retry runs again.
 */
export function idempotency(options: IdempotencyOptions): Middleware {
  const store = options?.store
  if (!store || typeof store.claim !== 'function') throw SETUP.TRV_CORE_IDEMPOTENCY_STORE()
  const windowMs = positive('windowMs', options.windowMs, DEFAULT_IDEMPOTENCY_WINDOW_MS)
  const lockMs = positive('lockMs', options.lockMs, DEFAULT_IDEMPOTENCY_LOCK_MS)

  async function run(call: TriviumCall<unknown>, key: string, next: () => unknown): Promise<unknown> {
    const definition = call.definition
    const fingerprint = createHash('sha256')
      .update(canonical(definition.request.toJSON(await call.body)))
      .digest('base64url')
    const scope = { user: String(call.identity?.userId ?? ''), endpoint: call.endpoint, key }
    const held = await store.claim(scope, fingerprint, windowMs, lockMs)
    if (held !== undefined) {
      if (held.fingerprint !== fingerprint)
        throw new UnprocessableContentException(
          'This Idempotency-Key was used with a different request body: use a new key for a new request',
        )
      if (!held.done)
        throw new ConflictException(
          'A request with this Idempotency-Key is still being processed: retry after it finishes',
        )
      call.setHeader('Idempotent-Replayed', 'true')
      return definition.response.fromJSON(held.response)
    }
    let value: unknown
    try {
      value = await next()
    } catch (err) {
      await store.release(scope).catch((releaseErr) => {
        call.log.warn(
          { err: releaseErr },
          'idempotency key not released: it is blocked until its lock passes',
        )
      })
      throw err
    }
    try {
      await store.complete(scope, definition.response.toJSON(value))
    } catch (err) {
      // The call's write is done: it is answered; a retry after the lock may run it again.
      call.log.warn({ err }, 'idempotency answer not stored')
    }
    return value
  }

  // Direct: for the endpoints that do not opt in (and calls without a key) it is `next()` as it is.
  return enforcesSettings(
    ['idempotencyKey'],
    directMiddleware((call, next) => {
      // A stream (of responses or of requests) has no one answer to replay: keys do not apply.
      if (
        !isEndpointCall(call) ||
        call.definition.config.idempotencyKey !== true ||
        call.definition.streaming ||
        call.definition.requestStream
      )
        return next()
      const key = idempotencyKeyOf(call)
      return key === undefined ? next() : run(call, key, next)
    }),
  )
}
