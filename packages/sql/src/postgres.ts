// PostgreSQL engine over a `pg` Pool.
import type { Pool, PoolClient, PoolConfig } from 'pg'
import { mapConnectionError } from './errors.js'
import { SETUP } from './setup-errors.js'
import { checkSchema, type QueryResult, quoteIdent, type SqlClient } from './types.js'

export interface PostgresOptions {
  /** e.g. `postgres://postgres@127.0.0.1:5432/app`. Ignored when `pool` is given. */
  connectionString?: string
  /** An existing pool; it is not ended by `close()`. */
  pool?: Pool
  /** Schema to work in: created if missing and put on `search_path` of every connection. */
  schema?: string
  /** Pool size when the adapter creates the pool (default 10). */
  max?: number
  /** How long to wait for a connection before failing with DatabaseUnavailableError (default 5000 ms). */
  connectionTimeoutMillis?: number
}

type Queryable = Pick<PoolClient, 'query'>

/** Each checked-out connection's server process id (`pg_backend_pid()`, asked once per connection). */
const backendPids = new WeakMap<PoolClient, number>()

async function backendPid(conn: PoolClient): Promise<number> {
  let pid = backendPids.get(conn)
  if (pid === undefined) {
    pid = (await conn.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid as number
    backendPids.set(conn, pid)
  }
  return pid
}

/**
 * One statement on `conn` (checked out by the caller, held until this resolves) stopped by `signal`:
 * when it aborts, `cancel(pid)` asks the server from another connection to cancel the statement running
 * on this one (pg_cancel_backend); the query rejects with the signal's reason. The connection stays
 * checked out until the cancel has been answered, so it can never cancel a later statement of
 * another caller on the same connection.
 */
async function runCancellable<R>(
  conn: PoolClient,
  text: string,
  params: unknown[] | undefined,
  signal: AbortSignal,
  cancel: (pid: number) => Promise<void>,
): Promise<QueryResult<R>> {
  if (signal.aborted) throw signal.reason
  const pid = await backendPid(conn).catch((err) => {
    throw mapConnectionError(err)
  })
  if (signal.aborted) throw signal.reason
  let cancelling: Promise<void> | undefined
  const onAbort = (): void => {
    cancelling = cancel(pid).catch(() => {}) // a cancel that fails leaves the statement to finish
  }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const result = await run<R>(conn, text, params)
    if (signal.aborted) throw signal.reason
    return result
  } catch (err) {
    throw signal.aborted ? signal.reason : err
  } finally {
    signal.removeEventListener('abort', onAbort)
    if (cancelling !== undefined) await cancelling
  }
}

async function run<R>(target: Queryable, text: string, params?: unknown[]): Promise<QueryResult<R>> {
  try {
    const result = await target.query(text, params as unknown[] | undefined)
    return { rows: result.rows as R[], rowCount: result.rowCount ?? result.rows.length }
  } catch (err) {
    throw mapConnectionError(err)
  }
}

async function runSimple(target: Queryable, sql: string): Promise<void> {
  try {
    await target.query(sql) // no parameters: simple protocol, several statements allowed
  } catch (err) {
    throw mapConnectionError(err)
  }
}

/** A client bound to one checked-out connection inside BEGIN … COMMIT. */
function transactionClient(conn: PoolClient, cancel: (pid: number) => Promise<void>): SqlClient {
  let savepoints = 0
  const tx: SqlClient = {
    dialect: 'postgres',
    query: (text, params, options) =>
      options?.signal === undefined
        ? run(conn, text, params)
        : runCancellable(conn, text, params, options.signal, cancel),
    exec: (sql) => runSimple(conn, sql),
    async transaction(fn) {
      const name = `trivium_sp_${++savepoints}`
      await runSimple(conn, `SAVEPOINT ${name}`)
      try {
        const value = await fn(tx)
        await runSimple(conn, `RELEASE SAVEPOINT ${name}`)
        return value
      } catch (err) {
        await runSimple(conn, `ROLLBACK TO SAVEPOINT ${name}`).catch(() => {})
        throw err
      }
    },
    async close() {
      throw new Error('@trivium/sql: close() cannot be called on a transaction client')
    },
  }
  return tx
}

/** The adapter's own pool: every connection starts with the schema on its search_path. */
async function createPool(opts: PostgresOptions, schema: string | undefined, max: number): Promise<Pool> {
  const { default: pg } = await import('pg')
  const config: PoolConfig = {
    connectionString: opts.connectionString,
    max,
    connectionTimeoutMillis: opts.connectionTimeoutMillis ?? 5000,
  }
  if (schema) config.options = `-c search_path=${schema}`
  const pool = new pg.Pool(config)
  // An idle connection dropped by the server must not crash the process; the next query reconnects.
  pool.on('error', () => {})
  return pool
}

/**
 * Checks out a connection; with `schema` (a pool passed in by the caller), sets search_path once on each
 * connection it hands us.
 */
function connectionAcquirer(pool: Pool, schema: string | undefined): () => Promise<PoolClient> {
  const prepared = new WeakSet<PoolClient>()
  const guarded = new WeakSet<PoolClient>()
  return async function acquire(): Promise<PoolClient> {
    let conn: PoolClient
    try {
      conn = await pool.connect()
    } catch (err) {
      throw mapConnectionError(err)
    }
    if (!guarded.has(conn)) {
      // pg-pool only listens for 'error' on idle connections: a connection lost while checked out
      // would otherwise be an uncaught exception. The failing query rejects on its own.
      conn.on('error', () => {})
      guarded.add(conn)
    }
    if (schema && !prepared.has(conn)) {
      try {
        await conn.query(`SET search_path TO ${quoteIdent(schema)}`)
        prepared.add(conn)
      } catch (err) {
        conn.release(err as Error)
        throw mapConnectionError(err)
      }
    }
    return conn
  }
}

/** Creates the schema, or checks the connection; a failure ends the adapter's own pool (`ownPool`). */
async function checkConnection(
  client: SqlClient,
  schema: string | undefined,
  ownPool: Pool | undefined,
): Promise<void> {
  if (schema) {
    try {
      // Schema names were validated; IF NOT EXISTS can still race with another instance (23505/42P06).
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)
    } catch (err) {
      const code = (err as { code?: string }).code
      if (code !== '23505' && code !== '42P06') {
        await ownPool?.end().catch(() => {})
        throw err
      }
    }
  } else {
    try {
      await client.query('SELECT 1')
    } catch (err) {
      await ownPool?.end().catch(() => {})
      throw err
    }
  }
}

// Cancels the statement of another connection: over a connection of its own when the adapter made
// the pool (`ownConnectionString`: a pool full of statements waiting to be cancelled cannot lend one),
// else one of the pool.
async function cancelBackend(
  pid: number,
  pool: Pool,
  ownConnectionString: string | undefined,
): Promise<void> {
  if (ownConnectionString !== undefined) {
    const { default: pg } = await import('pg')
    const side = new pg.Client({ connectionString: ownConnectionString })
    side.on('error', () => {})
    try {
      await side.connect()
      await side.query('SELECT pg_cancel_backend($1)', [pid])
    } finally {
      await side.end().catch(() => {})
    }
  } else {
    await pool.query('SELECT pg_cancel_backend($1)', [pid])
  }
}

/** `fn` on one checked-out connection inside BEGIN … COMMIT (ROLLBACK when it throws). */
async function runTransaction<T>(
  acquire: () => Promise<PoolClient>,
  cancel: (pid: number) => Promise<void>,
  fn: (tx: SqlClient) => Promise<T>,
): Promise<T> {
  const conn = await acquire()
  let broken: Error | undefined
  try {
    await runSimple(conn, 'BEGIN')
    const value = await fn(transactionClient(conn, cancel))
    await runSimple(conn, 'COMMIT')
    return value
  } catch (err) {
    try {
      await conn.query('ROLLBACK')
    } catch (rollbackErr) {
      broken = rollbackErr as Error // the connection is unusable: destroy it instead of reusing
    }
    throw err
  } finally {
    conn.release(broken)
  }
}

/**
 * Connects to PostgreSQL. Checks the connection (and creates `schema`) before resolving, so a
 * database that is down fails start-up with DatabaseUnavailableError.
 */
export async function connectPostgres(opts: PostgresOptions): Promise<SqlClient> {
  if (typeof opts !== 'object' || opts === null) throw SETUP.TRV_SQL_POSTGRES_OPTIONS()
  const schema = checkSchema(opts.schema)
  if (opts.pool === undefined && typeof opts.connectionString !== 'string') {
    throw SETUP.TRV_SQL_POSTGRES_CONNECTION()
  }
  const max = opts.max ?? 10
  if (!Number.isInteger(max) || max < 1) throw SETUP.TRV_SQL_POOL_MAX()

  const ownsPool = opts.pool === undefined
  const pool = opts.pool ? opts.pool : await createPool(opts, schema, max)

  const acquire = connectionAcquirer(pool, ownsPool ? undefined : schema)

  async function withConnection<T>(fn: (conn: PoolClient) => Promise<T>): Promise<T> {
    if (ownsPool || !schema) {
      // pool.query checks out and releases a connection itself
      return fn(pool as unknown as PoolClient)
    }
    const conn = await acquire()
    try {
      return await fn(conn)
    } finally {
      conn.release()
    }
  }

  const cancel = (pid: number) => cancelBackend(pid, pool, ownsPool ? opts.connectionString : undefined)

  async function queryCancellable<R>(
    text: string,
    params: unknown[] | undefined,
    signal: AbortSignal,
  ): Promise<QueryResult<R>> {
    if (signal.aborted) throw signal.reason
    const conn = await acquire()
    try {
      return await runCancellable<R>(conn, text, params, signal, cancel)
    } finally {
      conn.release()
    }
  }

  const client: SqlClient = {
    dialect: 'postgres',
    pool,
    query: (text, params, options) =>
      options?.signal === undefined
        ? withConnection((conn) => run(conn, text, params))
        : queryCancellable(text, params, options.signal),
    exec: (sql) => withConnection((conn) => runSimple(conn, sql)),
    transaction: (fn) => runTransaction(acquire, cancel, fn),
    async close() {
      if (ownsPool) await pool.end()
    },
  }

  await checkConnection(client, schema, ownsPool ? pool : undefined)
  return client
}
