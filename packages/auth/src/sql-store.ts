// SQL variants (PostgreSQL and PGlite through @trivium/sql): the revocation table (README "Revocation list") and the
// issued-token ledger. All tables of the package are created by one migration list, component `auth`.
// An unreachable database surfaces as @trivium/sql's DatabaseUnavailableError, a
// ServiceUnavailableException (503): the middleware then refuses the request (fail closed).
import { type Migration, runMigrations, type SqlClient } from '@trivium/sql'
import type { LedgerEntry, TokenLedger } from './ledger.js'
import {
  type DurableRevocationStore,
  MemoryRevocationStore,
  type MemoryRevocationStoreOptions,
} from './revocation.js'
import { RevocationLookups } from './revocation-lookups.js'
import { SETUP } from './setup-errors.js'
import type { Clock } from './tokens.js'

export const AUTH_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'revoked_tokens',
    sql: `CREATE TABLE revoked_tokens (
  jti text PRIMARY KEY,
  expires_at timestamptz NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX revoked_tokens_expires_at_idx ON revoked_tokens (expires_at) WHERE expires_at IS NOT NULL;`,
  },
  {
    version: 2,
    name: 'users',
    sql: `CREATE TABLE auth_users (
  id bigserial PRIMARY KEY,
  username text NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  totp_secret text NULL,
  totp_enabled boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX auth_users_username_key ON auth_users (lower(username));
CREATE UNIQUE INDEX auth_users_email_key ON auth_users (lower(email));`,
  },
  {
    version: 3,
    name: 'issued_tokens',
    sql: `CREATE TABLE auth_issued_tokens (
  jti text PRIMARY KEY,
  user_id bigint NOT NULL,
  expires_at bigint NOT NULL,
  consumed_at timestamptz NULL,
  reused_at timestamptz NULL
);
CREATE INDEX auth_issued_tokens_user_idx ON auth_issued_tokens (user_id, expires_at);`,
  },
  {
    version: 4,
    name: 'revoked_tokens_created_at',
    // The mirror's poll of recent rows (RedisRevocationStore with `durable`).
    sql: 'CREATE INDEX revoked_tokens_created_at_idx ON revoked_tokens (created_at);',
  },
]

/** Creates or updates the package's tables (idempotent, safe from several instances at once). */
export function migrateAuth(client: SqlClient): Promise<void> {
  return runMigrations(client, 'auth', AUTH_MIGRATIONS)
}

export interface SqlRevocationStoreOptions {
  client: SqlClient
  clock?: Clock
}

/** Table variant: revoked_tokens(jti, expires_at, created_at). Call `migrate()` once at start. */
export class SqlRevocationStore implements DurableRevocationStore {
  private readonly client: SqlClient
  private readonly clock: Clock

  constructor(options: SqlRevocationStoreOptions) {
    if (!options || typeof options.client?.query !== 'function') {
      throw SETUP.TRV_AUTH_SQL_CLIENT('SqlRevocationStore')
    }
    this.client = options.client
    this.clock = options.clock ?? Date.now
  }

  /** Runs the package's migrations. */
  migrate(): Promise<void> {
    return migrateAuth(this.client)
  }

  private now(): Date {
    return new Date(this.clock())
  }

  async add(jti: string, ttlSeconds?: number): Promise<void> {
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > 512) {
      throw new TypeError('@trivium/auth: jti must be a non-empty string of at most 512 characters')
    }
    if (
      ttlSeconds !== undefined &&
      (typeof ttlSeconds !== 'number' || !Number.isFinite(ttlSeconds) || ttlSeconds <= 0)
    ) {
      throw new TypeError('@trivium/auth: ttlSeconds must be a positive number')
    }
    const now = this.clock()
    const expiresAt = ttlSeconds === undefined ? null : new Date(now + Math.ceil(ttlSeconds) * 1000)
    await this.client.query(
      `INSERT INTO revoked_tokens (jti, expires_at, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (jti) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
      [jti, expiresAt, new Date(now)],
    )
  }

  /**
   * True only when the row exists and expires_at is null or later than now. Lookups made while this
   * store's queries run go together in the next query (revocation-lookups.ts): never an older answer.
   */
  contains(jti: string): Promise<boolean> {
    return this.lookups.contains(jti)
  }

  private readonly lookups = new RevocationLookups(async (jtis) => {
    const { rows } =
      jtis.length === 1
        ? await this.client.query<{ jti: string }>(
            'SELECT jti FROM revoked_tokens WHERE jti = $1 AND (expires_at IS NULL OR expires_at > $2)',
            [jtis[0], this.now()],
          )
        : await this.client.query<{ jti: string }>(
            'SELECT jti FROM revoked_tokens WHERE jti = ANY($1::text[]) AND (expires_at IS NULL OR expires_at > $2)',
            [jtis, this.now()],
          )
    return new Set(rows.map((r) => r.jti))
  })

  /** Every row not expired now (what a copy of the list is rebuilt from); or only those created since. */
  async entries(addedSinceMs?: number): Promise<[string, number | null][]> {
    const { rows } = await this.client.query<{ jti: string; expires_at: Date | string | null }>(
      `SELECT jti, expires_at FROM revoked_tokens WHERE (expires_at IS NULL OR expires_at > $1)${
        addedSinceMs === undefined ? '' : ' AND created_at >= $2'
      }`,
      addedSinceMs === undefined ? [this.now()] : [this.now(), new Date(addedSinceMs)],
    )
    return rows.map((r) => [r.jti, r.expires_at === null ? null : new Date(r.expires_at).getTime()])
  }

  async remove(jti: string): Promise<void> {
    await this.client.query('DELETE FROM revoked_tokens WHERE jti = $1', [jti])
  }

  /** Deletes rows whose expires_at is not null and <= now. */
  async cleanup(): Promise<number> {
    const { rowCount } = await this.client.query(
      'DELETE FROM revoked_tokens WHERE expires_at IS NOT NULL AND expires_at <= $1',
      [this.now()],
    )
    return rowCount
  }
}

/**
 * The revocation table held whole in memory, for a database that this process alone writes (embedded
 * PGlite): lookups are answered from memory, synchronously, and never reach the database; every write goes
 * to memory and then to the table, so the list survives a restart (`load()` reads it back before serving).
 * Not for a database other processes write too: their revocations would never reach this copy — use
 * `SqlRevocationStore`, or Redis with `durable` (README "Durable source").
 */
export class SingleWriterSqlRevocationStore extends MemoryRevocationStore implements DurableRevocationStore {
  readonly #table: SqlRevocationStore

  constructor(options: SqlRevocationStoreOptions & MemoryRevocationStoreOptions) {
    super(options)
    this.#table = new SqlRevocationStore(options)
  }

  /** Runs the package's migrations. */
  migrate(): Promise<void> {
    return this.#table.migrate()
  }

  /** Reads the table into memory; call once before serving. */
  async load(): Promise<void> {
    this.restore(await this.#table.entries())
  }

  // Memory first: a database that fails the write (503 to the caller) still leaves the token refused here.
  override async add(jti: string, ttlSeconds?: number): Promise<void> {
    await super.add(jti, ttlSeconds)
    await this.#table.add(jti, ttlSeconds)
  }

  override async remove(jti: string): Promise<void> {
    await this.#table.remove(jti)
    await super.remove(jti)
  }

  override async cleanup(): Promise<number> {
    await super.cleanup()
    return this.#table.cleanup()
  }

  entries(addedSinceMs?: number): Promise<[string, number | null][]> {
    return this.#table.entries(addedSinceMs)
  }
}

/** SQL ledger of issued tokens (auth_issued_tokens). */
export class SqlTokenLedger implements TokenLedger {
  constructor(private readonly client: SqlClient) {
    if (typeof client?.query !== 'function') throw SETUP.TRV_AUTH_SQL_CLIENT('SqlTokenLedger')
  }

  migrate(): Promise<void> {
    return migrateAuth(this.client)
  }

  async record(userId: number, jti: string, exp: number): Promise<void> {
    await this.client.query(
      'INSERT INTO auth_issued_tokens (jti, user_id, expires_at) VALUES ($1, $2, $3) ON CONFLICT (jti) DO NOTHING',
      [jti, userId, exp],
    )
  }

  async consume(jti: string): Promise<boolean> {
    const { rows } = await this.client.query(
      'UPDATE auth_issued_tokens SET consumed_at = now() WHERE jti = $1 AND consumed_at IS NULL RETURNING jti',
      [jti],
    )
    return rows.length === 1
  }

  async markReused(jti: string): Promise<void> {
    await this.client.query(
      'UPDATE auth_issued_tokens SET reused_at = now() WHERE jti = $1 AND reused_at IS NULL',
      [jti],
    )
  }

  async isReused(jti: string): Promise<boolean> {
    const { rows } = await this.client.query(
      'SELECT 1 AS x FROM auth_issued_tokens WHERE jti = $1 AND reused_at IS NOT NULL',
      [jti],
    )
    return rows.length > 0
  }

  async listActive(userId: number, nowSec: number): Promise<LedgerEntry[]> {
    const { rows } = await this.client.query<{ jti: string; expires_at: string | number }>(
      'SELECT jti, expires_at FROM auth_issued_tokens WHERE user_id = $1 AND expires_at > $2',
      [userId, nowSec],
    )
    return rows.map((r) => ({ jti: r.jti, exp: Number(r.expires_at) }))
  }

  async cleanup(nowSec: number): Promise<number> {
    const { rowCount } = await this.client.query('DELETE FROM auth_issued_tokens WHERE expires_at <= $1', [
      nowSec,
    ])
    return rowCount
  }
}
