// PGlite engine: PostgreSQL compiled to WASM, in-process. One connection.
//
// Queries take a fast path: a SELECT/INSERT/UPDATE/DELETE/WITH text is prepared once as a named
// statement (its parameter types and result columns kept), then every call is one exchange with the
// engine — Bind + Execute + Sync — decoded in one pass (./pglite-wire.ts). PGlite's own `query` costs
// five exchanges (Parse, Describe, Bind, Describe, Execute) plus Sync, each through its general
// protocol classes. Values are serialized and parsed with PGlite's own serializers/parsers, so rows
// and errors are the same. Other statements (DDL, SET, LOCK …) and `exec` go through PGlite and drop
// the prepared statements (a table they change may change a statement's columns).
//
// One exchange runs synchronously (inside PGlite's `execProtocolRawStream` call), so queries outside a transaction need no lock;
// `transaction()` (and the PGlite calls, which await) run one at a time, and a query arriving while one
// is queued or open waits for it, as with PGlite's own transaction().
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { DatabaseUnavailableError, mapConnectionError } from './errors.js'
import { type ExchangeResult, type FieldInfo, MessageWriter, ResponseReader } from './pglite-wire.js'
import { SETUP } from './setup-errors.js'
import { checkSchema, type QueryResult, quoteIdent, type SqlClient } from './types.js'

export interface PgliteOptions {
  /** Directory for the data files; omitted = in-memory (gone when closed). */
  dataDir?: string
  /** Schema to work in: created if missing and set as search_path. */
  schema?: string
  /**
   * PostgreSQL settings given at start (`-c name=value`), over the defaults of `PGLITE_SETTINGS`
   * (`shared_buffers=16MB`: the buffer cache lives in the WASM heap, and PGlite's 128 MB default is
   * most of the process's memory). E.g. `{ shared_buffers: '64MB', work_mem: '8MB' }`.
   */
  settings?: Record<string, string>
  /**
   * A new `dataDir` is initialised (initdb) in a short-lived child process instead of this one: PGlite
   * runs initdb in a second WASM instance plus a temporary engine, whose hundreds of MB would otherwise
   * stay in this process's RSS long after they are dropped. Costs a second WASM compilation (about a
   * second) on the first start only. Default false.
   */
  initdbInChildProcess?: boolean
}

/** The settings `connectPglite` starts PGlite with unless `settings` overrides them. */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = Object.freeze({ shared_buffers: '16MB' })

const SETTING_NAME = /^[a-z][a-z0-9_.]*$/

/** Statements worth preparing: their result columns depend only on the tables they read. */
const PREPARABLE = /^\s*(?:select|insert|update|delete|with)\b/i
/** Distinct texts kept prepared; past this, further texts run through PGlite's own query. */
const MAX_PREPARED = 500

interface Prepared {
  name: string
  paramTypes: number[]
  fields: FieldInfo[] | null
}

type PgliteModule = typeof import('@electric-sql/pglite')
type Parser = (text: string, typeId: number) => unknown
type Serializer = (value: unknown) => string

function noop(): void {}

/** The Error PGlite would throw for this ErrorResponse (same class and fields). */
function databaseError(
  lib: PgliteModule,
  r: ExchangeResult,
  query: string,
  params: unknown[] | undefined,
): Error {
  const fields = r.error ?? {}
  const message = fields.M ?? 'unknown error'
  const err = new lib.messages.DatabaseError(message, r.errorLength ?? 0, 'error') as unknown as Record<
    string,
    unknown
  >
  err.severity = fields.S
  err.code = fields.C
  err.detail = fields.D
  err.hint = fields.H
  err.position = fields.P
  err.internalPosition = fields.p
  err.internalQuery = fields.q
  err.where = fields.W
  err.schema = fields.s
  err.table = fields.t
  err.column = fields.c
  err.dataType = fields.d
  err.constraint = fields.n
  err.file = fields.F
  err.line = fields.L
  err.routine = fields.R
  err.query = query
  err.params = params
  err.queryOptions = undefined
  return err as unknown as Error
}

/** Rows changed, as PGlite counts them (INSERT/UPDATE/DELETE/COPY/MERGE tags). */
function affected(tags: readonly string[]): number {
  let n = 0
  for (const tag of tags) {
    const words = tag.split(' ')
    switch (words[0]) {
      case 'INSERT':
      case 'UPDATE':
      case 'DELETE':
      case 'COPY':
      case 'MERGE': {
        const count = Number.parseInt(words[words.length - 1] ?? '', 10)
        if (!Number.isNaN(count)) n += count
      }
    }
  }
  return n
}

/**
 * One exchange's answer bytes, gathered from PGlite's chunks. The buffer is kept between exchanges
 * (no allocation per call) unless an answer made it larger than `KEEP_BYTES`.
 */
class AnswerBuffer {
  private static readonly KEEP_BYTES = 1 << 20
  private buf = new Uint8Array(16 * 1024)
  private length = 0

  clear(): void {
    this.length = 0
  }

  append(chunk: Uint8Array): void {
    const end = this.length + chunk.byteLength
    if (end > this.buf.byteLength) {
      const grown = new Uint8Array(Math.max(end, this.buf.byteLength * 2))
      grown.set(this.buf.subarray(0, this.length))
      this.buf = grown
    }
    this.buf.set(chunk, this.length)
    this.length = end
  }

  /** The bytes gathered so far (a view: read them before the next exchange). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length)
  }

  /** After reading: a buffer grown past KEEP_BYTES by one large answer is not kept for the process's life. */
  release(): void {
    if (this.buf.byteLength > AnswerBuffer.KEEP_BYTES) this.buf = new Uint8Array(16 * 1024)
    this.length = 0
  }
}

/** The embedded engine with its prepared statements; every method but `fallback*` is synchronous. */
class Engine {
  private readonly writer = new MessageWriter()
  private readonly reader = new ResponseReader()
  private readonly statements = new Map<string, Prepared>()
  private stale: string[] = []
  private seq = 0
  /** True between BEGIN and COMMIT/ROLLBACK of `transaction()`. */
  inTransaction = false

  constructor(
    private readonly db: PGlite,
    private readonly lib: PgliteModule,
  ) {}

  /** The answer of the exchange in progress, as PGlite hands it over (a view of the WASM heap each time). */
  private readonly answer = new AnswerBuffer()
  private readonly onRawData = (chunk: Uint8Array): void => this.answer.append(chunk)

  /** One round trip: the messages in, every answer up to ReadyForQuery out. */
  private exchange(message: Uint8Array): ExchangeResult {
    // PGlite's `execProtocolRawStream` with `onRawData`, not `execProtocolRawSync`: without a data
    // callback of its own, the sync call also parses every answer into PGlite's result collector, which
    // only `query`/`exec`/`execProtocol` replace, so on a fast path that rarely calls them every
    // DataRow/CommandComplete/ReadyForQuery stayed reachable from the PGlite instance (~290 B per
    // one-row SELECT, forever: issue 44). With the callback the bytes come here and nowhere else.
    // The engine runs inside the call (PGlite's stream call runs `execProtocolRawSync` before its
    // first await, and there is no await with `syncToFs: false`): the answer is complete when it
    // returns, so an exchange cannot interleave with another and needs no lock. Should a later PGlite
    // answer later, no ReadyForQuery is read here and every query fails with 503 rather than misreads
    // (so does every PGlite test). No syncToFs: the data directory is written through.
    if (this.crashed !== undefined) throw new DatabaseUnavailableError(this.crashed)
    this.answer.clear()
    let failed: DatabaseUnavailableError | undefined
    this.db.execProtocolRawStream(message, { syncToFs: false, onRawData: this.onRawData }).catch((err) => {
      // The engine threw (a WASM trap): the promise is already rejected, so this runs before anyone
      // awaiting the query sees `failed` (their continuations are queued after it). Every later
      // exchange fails with it, as the sync call's throw failed each query.
      this.crashed = err
      if (failed !== undefined) (failed as { cause?: unknown }).cause = err
    })
    const result = this.reader.read(this.answer.bytes())
    this.answer.release()
    if (result.status !== undefined) return result
    failed = new DatabaseUnavailableError() // no ReadyForQuery: the engine did not finish the exchange
    throw failed
  }

  /** What the engine threw, if it ever did: the engine is not used again. */
  private crashed: unknown

  /** A simple-protocol statement (BEGIN, COMMIT, SAVEPOINT …): its command tags. */
  simple(sql: string): string[] {
    const r = this.exchange(this.writer.query(sql).take())
    if (r.error) throw databaseError(this.lib, r, sql, undefined)
    return r.tags
  }

  /** The query on the fast path, or undefined when it must go through PGlite (`fallbackQuery`). */
  query<R>(text: string, params: unknown[] | undefined): QueryResult<R> | undefined {
    let st = this.statements.get(text)
    if (st === undefined) {
      if (this.statements.size >= MAX_PREPARED || !PREPARABLE.test(text)) return undefined
      st = this.prepare(text, params)
    }
    const values = this.serialize(params, st.paramTypes)
    let r = this.exchange(this.writer.bind(st.name, values).execute().sync().take())
    if (r.error?.C === '0A000' && !this.inTransaction && r.error.M?.startsWith('cached plan')) {
      // The statement's columns changed under it (DDL not seen here): prepare it again, once.
      this.forget(text, st)
      st = this.prepare(text, params)
      r = this.exchange(this.writer.bind(st.name, values).execute().sync().take())
    }
    if (r.error) throw databaseError(this.lib, r, text, params)
    return { rows: this.rows<R>(r, st.fields), rowCount: affected(r.tags) || r.rows.length }
  }

  private prepare(text: string, params: unknown[] | undefined): Prepared {
    if (this.stale.length > 0 && !this.inTransaction) this.closeStale()
    const name = `trivium_${++this.seq}`
    const r = this.exchange(this.writer.parse(name, text).describeStatement(name).sync().take())
    if (r.error) throw databaseError(this.lib, r, text, params)
    const st: Prepared = { name, paramTypes: r.paramTypes ?? [], fields: r.fields ?? null }
    this.statements.set(text, st)
    return st
  }

  private forget(text: string, st: Prepared): void {
    this.statements.delete(text)
    this.stale.push(st.name)
  }

  /** Statements dropped from the cache are closed in the engine (outside a transaction). */
  private closeStale(): void {
    for (const name of this.stale) this.writer.closeStatement(name)
    this.stale = []
    this.exchange(this.writer.sync().take()) // closing is never an error worth failing a query for
  }

  /** After anything that may change tables: prepared statements are made again on next use. */
  invalidate(): void {
    for (const st of this.statements.values()) this.stale.push(st.name)
    this.statements.clear()
  }

  /** PGlite's serialization: its serializer for the parameter's type, else `toString()`. */
  private serialize(params: unknown[] | undefined, types: readonly number[]): (string | Uint8Array | null)[] {
    if (params === undefined || params.length === 0) return []
    const serializers = this.db.serializers as Record<number, Serializer | undefined>
    const out: (string | Uint8Array | null)[] = new Array(params.length)
    for (let i = 0; i < params.length; i++) {
      const v = params[i]
      if (v === null || v === undefined) {
        out[i] = null
        continue
      }
      const serializer = serializers[types[i] as number]
      const s: unknown = serializer ? serializer(v) : (v as { toString(): string }).toString()
      if (s instanceof ArrayBuffer) out[i] = new Uint8Array(s)
      else if (ArrayBuffer.isView(s)) out[i] = new Uint8Array(s.buffer, s.byteOffset, s.byteLength)
      else out[i] = s as string
    }
    return out
  }

  /** Rows as PGlite builds them: one object per row, each value through PGlite's parser for its type. */
  private rows<R>(r: ExchangeResult, fields: FieldInfo[] | null): R[] {
    if (r.rows.length === 0 || fields === null) return []
    const parsers = this.db.parsers as Record<number, Parser | undefined>
    const n = fields.length
    const names = fields.map((f) => f.name)
    const types = fields.map((f) => f.typeId)
    const parse = types.map((t) => parsers[t])
    const out: R[] = new Array(r.rows.length)
    for (let i = 0; i < r.rows.length; i++) {
      const values = r.rows[i] as (string | null)[]
      const row: Record<string, unknown> = {}
      for (let c = 0; c < n; c++) {
        const v = values[c] as string | null
        const p = parse[c]
        row[names[c] as string] = v === null ? null : p ? p(v, types[c] as number) : v
      }
      out[i] = row as R
    }
    return out
  }

  /** A PGlite call in flight: its exchanges are separate awaits, nothing else may run between them. */
  private busy: Promise<unknown> | undefined

  /** True while a PGlite call is in flight (the fast path then waits for `idle()`). */
  get isBusy(): boolean {
    return this.busy !== undefined
  }

  async idle(): Promise<void> {
    while (this.busy !== undefined) await this.busy.then(noop, noop)
  }

  private viaPglite<T>(fn: () => Promise<T>): Promise<T> {
    if (this.busy !== undefined) return this.idle().then(() => this.viaPglite(fn))
    const call = fn()
    this.busy = call
    const done = (): void => {
      this.busy = undefined
      this.invalidate()
    }
    call.then(done, done)
    return call
  }

  /** Through PGlite's own `query` (statements the fast path does not prepare). */
  async fallbackQuery<R>(text: string, params: unknown[] | undefined): Promise<QueryResult<R>> {
    const result = await this.viaPglite(() => this.db.query<R>(text, params))
    return { rows: result.rows, rowCount: result.affectedRows || result.rows.length }
  }

  async fallbackExec(sql: string): Promise<void> {
    await this.viaPglite(() => this.db.exec(sql))
  }
}

async function withMappedErrors<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw mapConnectionError(err)
  }
}

function closedError(): DatabaseUnavailableError {
  return new DatabaseUnavailableError(new Error('PGlite is closed'))
}

function startParams(lib: PgliteModule, settings: Record<string, string> | undefined): string[] {
  if (settings !== undefined && (typeof settings !== 'object' || settings === null))
    throw SETUP.TRV_SQL_PGLITE_SETTINGS()
  const merged: Record<string, string> = { ...PGLITE_SETTINGS, ...settings }
  const params = [...lib.PGlite.defaultStartParams]
  for (const [name, value] of Object.entries(merged)) {
    if (!SETTING_NAME.test(name) || typeof value !== 'string' || value.includes('\0'))
      throw SETUP.TRV_SQL_PGLITE_SETTING(name)
    params.push('-c', `${name}=${value}`)
  }
  return params
}

/**
 * A new data directory is initialised (initdb) in a short-lived child process: PGlite runs initdb in a
 * second WASM instance plus a temporary engine, and in this process their hundreds of MB would stay
 * in the RSS long after they are dropped (a worker thread's memory is not all given back either).
 */
async function initialiseApart(dataDir: string, params: string[]): Promise<void> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return
  const { execFile } = await import('node:child_process')
  const url = import.meta.resolve('@electric-sql/pglite')
  const code = `const [url, dataDir, params] = process.argv.slice(1)
    const { PGlite } = await import(url)
    const db = await PGlite.create(dataDir, { startParams: JSON.parse(params) })
    await db.close()`
  await new Promise<void>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', code, url, dataDir, JSON.stringify(params)],
      (err, _stdout, stderr) =>
        err
          ? reject(
              new Error(`@trivium/sql: PGlite could not initialise ${dataDir}: ${stderr || err.message}`),
            )
          : resolve(),
    )
  })
}

/** A query on the engine's current state (inside a transaction for its client). */
type RunQuery = <R>(text: string, params: unknown[] | undefined) => Promise<QueryResult<R>>

/** Loads PGlite (an optional peer), starts the database and puts `schema` on its search_path. */
async function openPglite(
  opts: PgliteOptions,
  schema: string | undefined,
): Promise<{ lib: PgliteModule; db: PGlite }> {
  const lib = await import('@electric-sql/pglite').catch((err: NodeJS.ErrnoException) => {
    // An optional peer: PostgreSQL users never install the embedded engine.
    if (err.code !== 'ERR_MODULE_NOT_FOUND') throw err
    throw new Error(
      '@trivium/sql: connectPglite needs the optional peer @electric-sql/pglite: install it (npm install @electric-sql/pglite)',
      { cause: err },
    )
  })
  const params = startParams(lib, opts.settings)
  if (opts.dataDir !== undefined && opts.initdbInChildProcess === true)
    await initialiseApart(opts.dataDir, params)
  const db =
    opts.dataDir === undefined
      ? await lib.PGlite.create({ startParams: params })
      : await lib.PGlite.create(opts.dataDir, { startParams: params })
  if (schema) {
    await db.exec(
      `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}; SET search_path TO ${quoteIdent(schema)};`,
    )
  }
  return { lib, db }
}

/** BEGIN, COMMIT, SAVEPOINT …: after any PGlite call in flight. */
async function simpleStatement(engine: Engine, sql: string): Promise<string[]> {
  if (engine.isBusy) await engine.idle()
  try {
    return engine.simple(sql)
  } catch (err) {
    throw mapConnectionError(err)
  }
}

/** The client of one transaction (`isOpen` until it ends); `transaction()` nests with a SAVEPOINT. */
function transactionClient(engine: Engine, runQuery: RunQuery, isOpen: () => boolean): SqlClient {
  const simple = (sql: string) => simpleStatement(engine, sql)
  let savepoints = 0
  const check = (): void => {
    if (!isOpen()) throw new Error('Transaction is closed')
  }
  const client: SqlClient = {
    dialect: 'pglite',
    query(text, params, options) {
      try {
        check()
      } catch (err) {
        return Promise.reject(err)
      }
      return withSignal(options?.signal, () => runQuery(text, params))
    },
    exec: (sql) =>
      withMappedErrors(() => {
        check()
        return engine.fallbackExec(sql)
      }),
    async transaction(fn) {
      check()
      const name = `trivium_sp_${++savepoints}`
      await simple(`SAVEPOINT ${name}`)
      try {
        const value = await fn(client)
        await simple(`RELEASE SAVEPOINT ${name}`)
        return value
      } catch (err) {
        await simple(`ROLLBACK TO SAVEPOINT ${name}`).catch(noop)
        throw err
      }
    },
    async close() {
      throw new Error('@trivium/sql: close() cannot be called on a transaction client')
    },
  }
  return client
}

/** `fn` inside BEGIN … COMMIT (ROLLBACK when it throws); a transaction the callback left aborted is refused. */
async function runTransaction<T>(
  engine: Engine,
  lib: PgliteModule,
  runQuery: RunQuery,
  fn: (tx: SqlClient) => Promise<T>,
): Promise<T> {
  const simple = (sql: string) => simpleStatement(engine, sql)
  let open = true
  await simple('BEGIN')
  engine.inTransaction = true
  try {
    let value: T
    try {
      value = await fn(transactionClient(engine, runQuery, () => open))
    } catch (err) {
      open = false
      await simple('ROLLBACK').catch(noop)
      throw err
    }
    open = false
    const tags = await simple('COMMIT')
    // A failed statement the callback swallowed left the transaction aborted: COMMIT rolled back.
    if (tags[tags.length - 1] === 'ROLLBACK') throw new lib.TransactionAbortedError()
    return value
  } finally {
    engine.inTransaction = false
  }
}

/** Starts an embedded PGlite database (in memory unless `dataDir` is given). */
export async function connectPglite(opts: PgliteOptions = {}): Promise<SqlClient> {
  if (typeof opts !== 'object' || opts === null) throw SETUP.TRV_SQL_PGLITE_OPTIONS()
  const schema = checkSchema(opts.schema)
  if (opts.dataDir !== undefined && (typeof opts.dataDir !== 'string' || opts.dataDir === '')) {
    throw SETUP.TRV_SQL_PGLITE_DATA_DIR()
  }
  const { lib, db } = await openPglite(opts, schema)
  const engine = new Engine(db, lib)
  let closed = false

  // Transactions, PGlite calls and close() run one at a time, in arrival order.
  let chain: Promise<unknown> = Promise.resolve()
  let queued = 0
  function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    queued++
    const run = chain.then(() => {
      if (closed) throw closedError()
      return fn()
    })
    const dequeue = (): void => {
      queued--
    }
    chain = run.then(dequeue, dequeue)
    return run
  }

  /** A query on whatever the engine's current state is (inside `transaction()` for its client). */
  function runQuery<R>(
    text: string,
    params: unknown[] | undefined,
    topLevel = false,
  ): Promise<QueryResult<R>> {
    if (engine.isBusy)
      return engine
        .idle()
        .then(() =>
          topLevel && queued > 0
            ? exclusive(() => runQuery<R>(text, params))
            : runQuery<R>(text, params, topLevel),
        )
    let result: QueryResult<R> | undefined
    try {
      result = engine.query<R>(text, params)
    } catch (err) {
      return Promise.reject(mapConnectionError(err))
    }
    if (result !== undefined) return Promise.resolve(result)
    // Outside a transaction, through the queue: no transaction may begin in the middle of it.
    const fallback = () => withMappedErrors(() => engine.fallbackQuery<R>(text, params))
    return topLevel && queued === 0 ? exclusive(fallback) : fallback()
  }

  return {
    dialect: 'pglite',
    query(text, params, options) {
      if (closed) return Promise.reject(closedError())
      return withSignal(options?.signal, () =>
        queued > 0 ? exclusive(() => runQuery(text, params)) : runQuery(text, params, true),
      )
    },
    exec(sql) {
      return exclusive(() => withMappedErrors(() => engine.fallbackExec(sql)))
    },
    transaction: (fn) => exclusive(() => runTransaction(engine, lib, runQuery, fn)),
    async close() {
      if (closed) return
      await exclusive(async () => {
        closed = true
        await db.close()
      }).catch((err: unknown) => {
        if (!(err instanceof DatabaseUnavailableError)) throw err
      })
    },
  }
}

/**
 * A query under `signal` on PGlite: the embedded engine runs one statement at a time in this thread and
 * cannot be interrupted, so the signal is checked before the statement and when it returns (its result
 * is then dropped: the caller gets the signal's reason, as on PostgreSQL).
 */
function withSignal<T>(signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
  if (signal === undefined) return run()
  if (signal.aborted) return Promise.reject(signal.reason)
  return run().then(
    (value) => {
      if (signal.aborted) throw signal.reason
      return value
    },
    (err) => {
      throw signal.aborted ? signal.reason : err
    },
  )
}
