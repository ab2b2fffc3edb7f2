// Idempotency keys (IETF draft-ietf-httpapi-idempotency-key-header): a client that retries a
// non-idempotent call sends the same key, and the server answers the retry with the first answer
// instead of running the call again. Opt-in per endpoint (`idempotencyKey: true`); the key travels in
// the `Idempotency-Key` header (HTTP) or the `idempotency_key` frame metadata (WebSocket, TCP).
// Records are kept per caller + endpoint + key in a store shared by every instance (SQL), for a window.
import { createHash } from 'node:crypto'
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_METADATA } from '@trivium/wire'
import type { TriviumCall } from './call.js'
import { enforcesSettings } from './endpoint-settings.js'
import { ConflictException, UnprocessableContentException, ValidationException } from './errors.js'
import { directMiddleware, type Middleware } from './middleware.js'
import { isEndpointCall } from './registry.js'
import { SETUP } from './setup-errors.js'

export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_METADATA }
/** How long a completed answer is replayed (24 h). */
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
/** How long a claim whose call never finished (its instance died) blocks the key (60 s). */
export const DEFAULT_IDEMPOTENCY_LOCK_MS = 60 * 1000
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/

export interface IdempotencyScope {
  /** The caller (`call.identity.userId`), `''` when anonymous. */
  user: string
  endpoint: string
  key: string
}

/** What a store knows about a key when it did not hand out a new claim. */
export interface IdempotencyRecord {
  fingerprint: string
  /** The first call finished: `response` is its answer (the response model's JSON form). */
  done: boolean
  response?: unknown
}

export interface IdempotencyStore {
  /**
   * Claims the key for a new execution, atomically across instances: `undefined` when claimed (no
   * record, an expired one, or a claim of the same body whose lock passed), otherwise the record held.
   */
  claim(
    scope: IdempotencyScope,
    fingerprint: string,
    windowMs: number,
    lockMs: number,
  ): Promise<IdempotencyRecord | undefined>
  /** Stores the answer of a claimed call. */
  complete(scope: IdempotencyScope, response: unknown): Promise<void>
  /** Drops a claim whose call failed (nothing was written): the key may be used again. */
  release(scope: IdempotencyScope): Promise<void>
}

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

interface MemoryEntry extends IdempotencyRecord {
  expiresAt: number
  lockedUntil: number
}

/** One process only (tests, a single instance without a database): records are lost on restart. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, MemoryEntry>()

  #id(scope: IdempotencyScope): string {
    return JSON.stringify([scope.user, scope.endpoint, scope.key])
  }

  async claim(scope: IdempotencyScope, fingerprint: string, windowMs: number, lockMs: number) {
    const id = this.#id(scope)
    const now = Date.now()
    const held = this.#entries.get(id)
    const free =
      held === undefined ||
      held.expiresAt <= now ||
      (!held.done && held.lockedUntil <= now && held.fingerprint === fingerprint)
    if (!free) return { fingerprint: held.fingerprint, done: held.done, response: held.response }
    this.#entries.delete(id) // re-inserted last: the Map stays in expiry order for the sweep
    this.#entries.set(id, { fingerprint, done: false, expiresAt: now + windowMs, lockedUntil: now + lockMs })
    for (const [oldId, entry] of this.#entries) {
      if (entry.expiresAt > now) break
      this.#entries.delete(oldId)
    }
    return undefined
  }

  async complete(scope: IdempotencyScope, response: unknown): Promise<void> {
    const entry = this.#entries.get(this.#id(scope))
    if (entry) Object.assign(entry, { done: true, response })
  }

  async release(scope: IdempotencyScope): Promise<void> {
    this.#entries.delete(this.#id(scope))
  }
}

/** The table of `SqlIdempotencyStore`, for the application's migrations (PostgreSQL and PGlite). */
export const IDEMPOTENCY_TABLE_SQL = `
  CREATE TABLE IF NOT EXISTS trivium_idempotency (
    user_id text NOT NULL,
    endpoint text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    done boolean NOT NULL DEFAULT false,
    response jsonb,
    locked_until timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, endpoint, key)
  );
  CREATE INDEX IF NOT EXISTS trivium_idempotency_expires ON trivium_idempotency (expires_at);`

/** The part of @trivium/sql's SqlClient the store uses (core does not depend on @trivium/sql). */
export interface IdempotencySqlClient {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: R[] }>
}

/**
 * Records in SQL (the table `IDEMPOTENCY_TABLE_SQL` creates), shared by every instance on the database.
 * The claim is one `INSERT … ON CONFLICT DO UPDATE … WHERE` statement, so two instances never both
 * claim a key. Expired rows are taken over by the next claim of their key and swept now and then.
 */
export class SqlIdempotencyStore implements IdempotencyStore {
  #claims = 0

  constructor(private readonly sql: IdempotencySqlClient) {}

  async claim(scope: IdempotencyScope, fingerprint: string, windowMs: number, lockMs: number) {
    const params = [scope.user, scope.endpoint, scope.key]
    for (;;) {
      const { rows: claimed } = await this.sql.query(
        `INSERT INTO trivium_idempotency AS t (user_id, endpoint, key, fingerprint, locked_until, expires_at)
         VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', now() + $6 * interval '1 millisecond')
         ON CONFLICT (user_id, endpoint, key) DO UPDATE SET
           fingerprint = EXCLUDED.fingerprint, done = false, response = NULL,
           locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at
         WHERE t.expires_at <= now()
            OR (NOT t.done AND t.locked_until <= now() AND t.fingerprint = EXCLUDED.fingerprint)
         RETURNING 1 AS claimed`,
        [...params, fingerprint, lockMs, windowMs],
      )
      if (claimed.length > 0) {
        if (++this.#claims % 1000 === 0) void this.#sweep()
        return undefined
      }
      const { rows } = await this.sql.query<{ fingerprint: string; done: boolean; response: unknown }>(
        'SELECT fingerprint, done, response FROM trivium_idempotency WHERE user_id = $1 AND endpoint = $2 AND key = $3',
        params,
      )
      const [row] = rows
      // Released between the two statements: claim again.
      if (row !== undefined) return { fingerprint: row.fingerprint, done: row.done, response: row.response }
    }
  }

  async complete(scope: IdempotencyScope, response: unknown): Promise<void> {
    await this.sql.query(
      'UPDATE trivium_idempotency SET done = true, response = $4 WHERE user_id = $1 AND endpoint = $2 AND key = $3',
      [scope.user, scope.endpoint, scope.key, JSON.stringify(response)],
    )
  }

  async release(scope: IdempotencyScope): Promise<void> {
    await this.sql.query(
      'DELETE FROM trivium_idempotency WHERE user_id = $1 AND endpoint = $2 AND key = $3 AND NOT done',
      [scope.user, scope.endpoint, scope.key],
    )
  }

  async #sweep(): Promise<void> {
    await this.sql.query('DELETE FROM trivium_idempotency WHERE expires_at <= now()').catch(() => {})
  }
}
