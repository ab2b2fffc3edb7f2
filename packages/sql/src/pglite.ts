// PGlite engine: PostgreSQL compiled to WASM, in-process. One connection; PGlite queues queries and
// its transaction() holds the connection until the callback settles.
import type { PGlite, Transaction } from '@electric-sql/pglite'
import { mapConnectionError } from './errors.js'
import { checkSchema, type QueryResult, quoteIdent, type SqlClient } from './types.js'

export interface PgliteOptions {
  /** Directory for the data files; omitted = in-memory (gone when closed). */
  dataDir?: string
  /** Schema to work in: created if missing and set as search_path. */
  schema?: string
}

type Target = Pick<PGlite | Transaction, 'query' | 'exec'>

async function run<R>(target: Target, text: string, params?: unknown[]): Promise<QueryResult<R>> {
  try {
    const result = await target.query<R>(text, params as unknown[] | undefined)
    return { rows: result.rows, rowCount: result.affectedRows || result.rows.length }
  } catch (err) {
    throw mapConnectionError(err)
  }
}

async function runSimple(target: Target, sql: string): Promise<void> {
  try {
    await target.exec(sql)
  } catch (err) {
    throw mapConnectionError(err)
  }
}

function transactionClient(tx: Transaction): SqlClient {
  let savepoints = 0
  const client: SqlClient = {
    dialect: 'pglite',
    query: (text, params) => run(tx, text, params),
    exec: (sql) => runSimple(tx, sql),
    async transaction(fn) {
      const name = `trivium_sp_${++savepoints}`
      await runSimple(tx, `SAVEPOINT ${name}`)
      try {
        const value = await fn(client)
        await runSimple(tx, `RELEASE SAVEPOINT ${name}`)
        return value
      } catch (err) {
        await runSimple(tx, `ROLLBACK TO SAVEPOINT ${name}`).catch(() => {})
        throw err
      }
    },
    async close() {
      throw new Error('@trivium/sql: close() cannot be called on a transaction client')
    },
  }
  return client
}

/** Starts an embedded PGlite database (in memory unless `dataDir` is given). */
export async function connectPglite(opts: PgliteOptions = {}): Promise<SqlClient> {
  if (typeof opts !== 'object' || opts === null)
    throw new TypeError('@trivium/sql: connectPglite options must be an object')
  const schema = checkSchema(opts.schema)
  if (opts.dataDir !== undefined && (typeof opts.dataDir !== 'string' || opts.dataDir === '')) {
    throw new TypeError('@trivium/sql: dataDir must be a non-empty string')
  }
  const { PGlite } = await import('@electric-sql/pglite')
  const db = opts.dataDir === undefined ? await PGlite.create() : await PGlite.create(opts.dataDir)
  if (schema) {
    await db.exec(
      `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}; SET search_path TO ${quoteIdent(schema)};`,
    )
  }
  let closed = false
  return {
    dialect: 'pglite',
    query: (text, params) => run(db, text, params),
    exec: (sql) => runSimple(db, sql),
    async transaction(fn) {
      try {
        return await db.transaction((tx) => fn(transactionClient(tx)))
      } catch (err) {
        throw mapConnectionError(err)
      }
    },
    async close() {
      if (closed) return
      closed = true
      await db.close()
    },
  }
}
