// Versioned, idempotent migrations shared by every component (`auth`, `rbac`, …) in one table:
//   trivium_migrations(component, version, name, applied_at), primary key (component, version).
// Everything runs in ONE transaction that first takes a transaction-scoped advisory lock, so two
// instances starting at once apply each migration exactly once: the second waits, then sees the
// versions the first recorded. DDL is transactional in PostgreSQL, so a failing migration leaves
// neither its changes nor its record behind.

import { SETUP } from './setup-errors.js'
import type { SqlClient } from './types.js'

export interface Migration {
  /** Positive integer, unique within the component; applied in increasing order. */
  version: number
  name: string
  /** One or more statements. */
  sql: string
}

export const MIGRATIONS_TABLE = 'trivium_migrations'

/** Advisory lock key: per schema, so separate schemas in one database do not wait on each other. */
const LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.${MIGRATIONS_TABLE}'))`

const CREATE_TABLE_SQL = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
  component text NOT NULL,
  version integer NOT NULL,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (component, version)
)`

export class MigrationError extends Error {
  readonly code = 'TRV_MIGRATION'
  constructor(message: string, options?: { cause?: unknown }) {
    super(`@trivium/sql: ${message}`, options)
    this.name = 'MigrationError'
  }
}

function validate(component: string, migrations: Migration[]): Migration[] {
  if (typeof component !== 'string' || !/^[a-z][a-z0-9_-]*$/.test(component)) {
    throw SETUP.TRV_SQL_COMPONENT()
  }
  if (!Array.isArray(migrations)) throw SETUP.TRV_SQL_MIGRATIONS()
  const seen = new Set<number>()
  for (const m of migrations) {
    if (typeof m !== 'object' || m === null || !Number.isInteger(m.version) || m.version < 1) {
      throw SETUP.TRV_SQL_MIGRATION_VERSION(component)
    }
    if (seen.has(m.version)) throw SETUP.TRV_SQL_MIGRATION_TWICE(component, m.version)
    seen.add(m.version)
    if (typeof m.name !== 'string' || m.name === '') {
      throw SETUP.TRV_SQL_MIGRATION_NAME(component, m.version)
    }
    if (typeof m.sql !== 'string' || m.sql.trim() === '') {
      throw SETUP.TRV_SQL_MIGRATION_SQL(component, m.version)
    }
  }
  return [...migrations].sort((a, b) => a.version - b.version)
}

/**
 * Applies the migrations of `component` that are not recorded yet. Safe to call on every start and
 * from several instances at once. A recorded version whose name differs from the code's is refused
 * (the code and the database disagree about history).
 */
export async function runMigrations(
  client: SqlClient,
  component: string,
  migrations: Migration[],
): Promise<void> {
  const ordered = validate(component, migrations)
  await client.transaction(async (tx) => {
    await tx.query(LOCK_SQL)
    await tx.query(CREATE_TABLE_SQL)
    const { rows } = await tx.query<{ version: number; name: string }>(
      `SELECT version, name FROM ${MIGRATIONS_TABLE} WHERE component = $1`,
      [component],
    )
    const applied = new Map(rows.map((r) => [r.version, r.name]))
    for (const m of ordered) {
      const recorded = applied.get(m.version)
      if (recorded !== undefined) {
        if (recorded !== m.name) {
          throw new MigrationError(
            `${component} migration ${m.version} is recorded as "${recorded}" but the code names it "${m.name}"`,
          )
        }
        continue
      }
      try {
        await tx.exec(m.sql)
      } catch (err) {
        throw new MigrationError(
          `${component} migration ${m.version} (${m.name}) failed: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        )
      }
      await tx.query(`INSERT INTO ${MIGRATIONS_TABLE} (component, version, name) VALUES ($1, $2, $3)`, [
        component,
        m.version,
        m.name,
      ])
    }
  })
}

/** Versions recorded for `component`, ascending (empty when none, or before the table exists). */
export async function appliedMigrations(client: SqlClient, component: string): Promise<number[]> {
  const exists = await client.query<{ t: string | null }>(
    `SELECT to_regclass('${MIGRATIONS_TABLE}')::text AS t`,
  )
  if (exists.rows[0]?.t == null) return []
  const result = await client.query<{ version: number }>(
    `SELECT version FROM ${MIGRATIONS_TABLE} WHERE component = $1 ORDER BY version`,
    [component],
  )
  return result.rows.map((r) => r.version)
}
