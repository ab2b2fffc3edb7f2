// Where idempotency records live (the middleware is middleware.ts): the store contract, one store per
// process (memory) and one shared by every instance (SQL). Beside the key logic that uses them, in core,
// because core's middleware is their one user and core depends on no other Trivium package.

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
