// The one client interface every Trivium package that stores data is written against. Two engines
// implement it with the same SQL: PostgreSQL through `pg`, and PGlite (embedded WASM PostgreSQL).
import { SETUP } from './setup-errors.js'

export type SqlDialect = 'postgres' | 'pglite'

export interface QueryResult<R> {
  rows: R[]
  /** Rows returned (SELECT) or changed (INSERT/UPDATE/DELETE). */
  rowCount: number
}

/** Options of one query. */
export interface QueryOptions {
  /**
   * Stops the query when it aborts (pass a call's `call.signal`: its deadline, a cancel, the client
   * leaving). The query rejects with the signal's reason. PostgreSQL: the running statement is cancelled
   * on the server (`pg_cancel_backend`); PGlite (one embedded engine, nothing runs beside it): the
   * signal is checked before the statement runs and when it returns.
   */
  signal?: AbortSignal
}

export interface SqlClient {
  readonly dialect: SqlDialect
  /** One statement with `$1`-style parameters. */
  query<R = Record<string, unknown>>(
    text: string,
    params?: unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<R>>
  /** Several statements separated by `;`, without parameters (DDL, migrations). */
  exec(sql: string): Promise<void>
  /**
   * Runs `fn` inside BEGIN/COMMIT; a throw rolls back and is rethrown. On PostgreSQL every query of
   * `tx` uses one pooled connection. Calling `tx.transaction` nests with a SAVEPOINT.
   */
  transaction<T>(fn: (tx: SqlClient) => Promise<T>): Promise<T>
  /** Ends the pool or the embedded database (a pool passed in by the caller is left open). */
  close(): Promise<void>
  /** PostgreSQL: the pool's connection counts (for metrics, e.g. `@trivium/metrics`' `pool`); PGlite: absent. */
  readonly pool?: SqlPoolCounts
}

/** Live connection counts of a PostgreSQL pool. */
export interface SqlPoolCounts {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
}

/** Schema names are interpolated into SQL, so only plain identifiers are accepted. */
export const SCHEMA_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

export function checkSchema(schema: string | undefined): string | undefined {
  if (schema === undefined) return undefined
  if (typeof schema !== 'string' || !SCHEMA_NAME_PATTERN.test(schema)) {
    throw SETUP.TRV_SQL_SCHEMA(schema)
  }
  return schema
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
