// The database: PostgreSQL when DATABASE_URL is set, otherwise embedded PGlite kept in DATA_DIR
// (@trivium/sql's defaults: prepared statements, shared_buffers 16MB).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import type { DemoConfig } from './config.js'

export async function openDatabase(config: DemoConfig): Promise<SqlClient> {
  if (config.databaseUrl) {
    return connectPostgres({ connectionString: config.databaseUrl, schema: config.databaseSchema })
  }
  const dir = join(config.dataDir, 'pglite')
  mkdirSync(dir, { recursive: true })
  // initdb of a new data directory in a child process: its memory never stays in the server's RSS.
  return connectPglite({ dataDir: dir, initdbInChildProcess: true })
}
