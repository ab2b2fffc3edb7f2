// The database: PostgreSQL when DATABASE_URL is set, otherwise embedded PGlite kept in DATA_DIR
// (@trivium/sql's defaults: prepared statements; shared_buffers 8MB instead of its 16MB).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import { describeDatabaseError } from './backend-checks.js'
import { ConfigError, type DemoConfig } from './config.js'

/** PostgreSQL settings of the embedded engine, over @trivium/sql's PGLITE_SETTINGS. */
const DEMO_PGLITE_SETTINGS = { shared_buffers: '8MB' }

/** The pool's connection timeout (@trivium/sql's default), named for the start-up message. */
const CONNECT_TIMEOUT_MS = 5000

export async function openDatabase(config: DemoConfig): Promise<SqlClient> {
  if (config.databaseUrl) {
    const url = config.databaseUrl
    const caFile = config.databaseCaFile
    // connectPostgres connects once (CREATE SCHEMA or SELECT 1): a failure there is a bad DATABASE_URL.
    return connectPostgres({
      connectionString: caFile === undefined ? url : withRootCert(url, caFile),
      schema: config.databaseSchema,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    }).catch((err: unknown) => {
      if (err instanceof TypeError) throw err // a bad option (DATABASE_SCHEMA), named by @trivium/sql
      throw new ConfigError(describeDatabaseError(url, err, CONNECT_TIMEOUT_MS, caFile !== undefined))
    })
  }
  const dir = join(config.dataDir, 'pglite')
  mkdirSync(dir, { recursive: true })
  // PGlite's PostgreSQL runs on V8's baseline WASM compiler (Liftoff) only: TurboFan's optimised copy of
  // its hot functions is ~40 MiB of code made during the first queries, for a service this size a third
  // of the demo's memory, while queries cost about the same CPU (bench/README.md, "bench/memory"). Set
  // before PGlite compiles its module; the process has no other WASM. Not on PostgreSQL (above).
  setFlagsFromString('--liftoff-only')
  // initdb of a new data directory in a child process: its memory never stays in the server's RSS.
  // shared_buffers 8MB (the package default is 16MB): the demo's tables fit, and the buffer cache is
  // WASM memory that is never given back — 12 MiB less RSS (bench/README.md, "bench/memory").
  return connectPglite({ dataDir: dir, initdbInChildProcess: true, settings: DEMO_PGLITE_SETTINGS })
}

/**
 * DATABASE_CA_FILE as the URL's `sslrootcert` (libpq's name, which pg reads): the URL's sslmode decides
 * that the certificate is checked (config.ts requires one that does).
 */
function withRootCert(url: string, caFile: string): string {
  const u = new URL(url)
  u.searchParams.set('sslrootcert', caFile)
  return u.toString()
}
