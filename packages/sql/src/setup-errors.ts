// @trivium/sql's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/wire'

export const SETUP = setupErrors('@trivium/sql', {
  TRV_SQL_COMPONENT: {
    when: "a migration set's component is not a lower-case name",
    message: () => 'component must be a lower-case name such as "rbac"',
  },
  TRV_SQL_MIGRATIONS: {
    when: 'the migrations given are not an array',
    message: () => 'migrations must be an array',
  },
  TRV_SQL_MIGRATION_VERSION: {
    when: 'a migration has no positive integer `version`',
    message: (component: string) => `${component}: every migration needs a positive integer version`,
  },
  TRV_SQL_MIGRATION_TWICE: {
    when: 'two migrations of one component have the same `version`',
    message: (component: string, version: number) =>
      `${component}: migration version ${version} is listed twice`,
  },
  TRV_SQL_MIGRATION_NAME: {
    when: 'a migration has no `name`',
    message: (component: string, version: number) => `${component}: migration ${version} needs a name`,
  },
  TRV_SQL_MIGRATION_SQL: {
    when: 'a migration has no `sql`',
    message: (component: string, version: number) => `${component}: migration ${version} needs sql`,
  },
  TRV_SQL_SCHEMA: {
    when: '`schema` is not a plain identifier',
    message: (schema: unknown) =>
      `schema must be a plain identifier (letters, digits, "_", at most 63 characters), got ${JSON.stringify(schema)}`,
  },
  TRV_SQL_POSTGRES_OPTIONS: {
    when: '`connectPostgres()` is called without options',
    message: () => 'connectPostgres needs options',
  },
  TRV_SQL_POSTGRES_CONNECTION: {
    when: '`connectPostgres()` is given neither `connectionString` nor `pool`',
    message: () => 'connectPostgres needs a connectionString or a pool',
  },
  TRV_SQL_POOL_MAX: {
    when: '`max` (pool size) is not a positive integer',
    message: () => 'max must be a positive integer',
  },
  TRV_SQL_PGLITE_OPTIONS: {
    when: "`connectPglite()`'s options are not an object",
    message: () => 'connectPglite options must be an object',
  },
  TRV_SQL_PGLITE_DATA_DIR: {
    when: '`dataDir` is not a non-empty string',
    message: () => 'dataDir must be a non-empty string',
  },
  TRV_SQL_PGLITE_SETTINGS: {
    when: '`settings` is not an object',
    message: () => 'settings must be an object of PostgreSQL setting names to values',
  },
  TRV_SQL_PGLITE_SETTING: {
    when: 'a PostgreSQL setting has an invalid name or a value that is not a string',
    message: (name: string) => `invalid PostgreSQL setting ${JSON.stringify(name)}`,
  },
})
