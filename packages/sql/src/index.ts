// @trivium/sql — one small SQL client interface over PostgreSQL (`pg`) and PGlite (embedded WASM
// PostgreSQL), with versioned migrations. The same SQL runs on both engines.
export {
  DATABASE_UNAVAILABLE_MESSAGE,
  DatabaseUnavailableError,
  isConnectionError,
  isForeignKeyViolation,
  isUniqueViolation,
  mapConnectionError,
  violatedConstraint,
} from './errors.js'
export {
  appliedMigrations,
  MIGRATIONS_TABLE,
  type Migration,
  MigrationError,
  runMigrations,
} from './migrations.js'
export { connectPglite, PGLITE_SETTINGS, type PgliteOptions } from './pglite.js'
export { connectPostgres, type PostgresOptions } from './postgres.js'
export {
  type QueryOptions,
  type QueryResult,
  quoteIdent,
  SCHEMA_NAME_PATTERN,
  type SqlClient,
  type SqlDialect,
  type SqlPoolCounts,
} from './types.js'
