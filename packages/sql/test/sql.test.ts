import {
  connectPglite,
  connectPostgres,
  DatabaseUnavailableError,
  isForeignKeyViolation,
  isUniqueViolation,
} from '@trivium/sql'
import { isTriviumError, toErrorBody } from '@trivium/wire'
import t from 'tap'
import { dropSchema, engines, PG_URL, randomSchema } from './helpers.ts'

for (const engine of engines) {
  t.test(`${engine.name}: query, rowCount and types`, async (t) => {
    const { client } = await engine.open(t)
    t.equal(client.dialect, engine.name)
    await client.exec(`CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL UNIQUE, at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE tags (item_id integer NOT NULL REFERENCES items(id), tag text NOT NULL)`)
    const ins = await client.query<{ id: number }>(
      'INSERT INTO items (name) VALUES ($1), ($2) RETURNING id',
      ['a', 'b'],
    )
    t.same(ins.rows, [{ id: 1 }, { id: 2 }])
    t.equal(ins.rowCount, 2)
    const sel = await client.query<{ id: number; name: string; at: Date }>('SELECT * FROM items ORDER BY id')
    t.equal(sel.rowCount, 2)
    t.ok(sel.rows[0]?.at instanceof Date, 'timestamptz is a Date')
    t.equal(typeof sel.rows[0]?.id, 'number', 'integer is a number')
    const upd = await client.query('UPDATE items SET name = name || $1', ['!'])
    t.equal(upd.rowCount, 2)
    const del = await client.query('DELETE FROM items WHERE name = $1', ['nope'])
    t.equal(del.rowCount, 0)
  })

  t.test(`${engine.name}: unique and foreign-key violations are recognised`, async (t) => {
    const { client } = await engine.open(t)
    await client.exec(`CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
      CREATE TABLE tags (item_id integer NOT NULL REFERENCES items(id), tag text NOT NULL)`)
    await client.query('INSERT INTO items (name) VALUES ($1)', ['a'])
    const dup = await client.query('INSERT INTO items (name) VALUES ($1)', ['a']).catch((e: unknown) => e)
    t.ok(isUniqueViolation(dup))
    t.notOk(isForeignKeyViolation(dup))
    const fk = await client
      .query('INSERT INTO tags (item_id, tag) VALUES ($1, $2)', [99, 'x'])
      .catch((e: unknown) => e)
    t.ok(isForeignKeyViolation(fk))
    t.notOk(isUniqueViolation(fk))
    t.notOk(isUniqueViolation(new Error('x')))
    t.notOk(isUniqueViolation(null))
    // a syntax error stays a plain SQL error, not a DatabaseUnavailableError
    const syntax = await client.query('SELEC 1').catch((e: unknown) => e)
    t.notOk(syntax instanceof DatabaseUnavailableError)
  })

  t.test(`${engine.name}: transaction commits, rolls back, nests with savepoints`, async (t) => {
    const { client } = await engine.open(t)
    await client.exec('CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL UNIQUE)')
    const v = await client.transaction(async (tx) => {
      await tx.query('INSERT INTO items (name) VALUES ($1)', ['kept'])
      return 42
    })
    t.equal(v, 42)
    const err = await client
      .transaction(async (tx) => {
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['lost'])
        throw new Error('boom')
      })
      .catch((e: Error) => e)
    t.equal((err as Error).message, 'boom')
    const dup = await client
      .transaction(async (tx) => {
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['lost2'])
        await tx.query('INSERT INTO items (name) VALUES ($1)', ['kept'])
      })
      .catch((e: unknown) => e)
    t.ok(isUniqueViolation(dup), 'the SQL error comes out of transaction()')
    await client.transaction(async (tx) => {
      await tx.query('INSERT INTO items (name) VALUES ($1)', ['outer'])
      const inner = await tx
        .transaction(async (sp) => {
          await sp.query('INSERT INTO items (name) VALUES ($1)', ['inner'])
          throw new Error('inner fails')
        })
        .catch((e: Error) => e.message)
      t.equal(inner, 'inner fails')
      await tx.transaction(async (sp) => {
        await sp.query('INSERT INTO items (name) VALUES ($1)', ['inner-ok'])
      })
    })
    const { rows } = await client.query<{ name: string }>('SELECT name FROM items ORDER BY id')
    t.same(
      rows.map((r) => r.name),
      ['kept', 'outer', 'inner-ok'],
    )
    await t.rejects(
      client.transaction((tx) => tx.close()),
      { message: '@trivium/sql: close() cannot be called on a transaction client' },
    )
  })
}

t.test('postgres: the schema is created and used through search_path', async (t) => {
  const schema = randomSchema()
  t.teardown(() => dropSchema(schema))
  const a = await connectPostgres({ connectionString: PG_URL, schema })
  t.teardown(() => a.close())
  await a.exec('CREATE TABLE things (id integer)')
  const { rows } = await a.query<{ s: string; n: number }>(
    `SELECT current_schema() AS s, (SELECT count(*)::int FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'things') AS n`,
    [schema],
  )
  t.same(rows, [{ s: schema, n: 1 }])
  // connecting again to the existing schema is fine
  const b = await connectPostgres({ connectionString: PG_URL, schema })
  t.teardown(() => b.close())
  t.same((await b.query('SELECT count(*)::int AS n FROM things')).rows, [{ n: 0 }])
})

t.test('postgres: a caller-owned pool gets search_path on each connection and is not ended', async (t) => {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 })
  t.teardown(() => pool.end())
  const schema = randomSchema()
  t.teardown(() => dropSchema(schema))
  const client = await connectPostgres({ pool, schema })
  await client.exec('CREATE TABLE things (id integer)')
  await Promise.all([1, 2, 3, 4].map((i) => client.query('INSERT INTO things VALUES ($1)', [i])))
  await client.transaction((tx) => tx.query('INSERT INTO things VALUES (5)'))
  t.same((await client.query('SELECT count(*)::int AS n FROM things')).rows, [{ n: 5 }])
  await client.close()
  t.same((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'pool still usable')
})

t.test('bad options are refused with clear messages', async (t) => {
  await t.rejects(connectPostgres({ connectionString: PG_URL, schema: 'x; DROP TABLE y' }), {
    message:
      '@trivium/sql: schema must be a plain identifier (letters, digits, "_", at most 63 characters), got "x; DROP TABLE y"',
  })
  await t.rejects(connectPostgres({}), {
    message: '@trivium/sql: connectPostgres needs a connectionString or a pool',
  })
  await t.rejects(connectPostgres({ connectionString: PG_URL, max: 0 }), {
    message: '@trivium/sql: max must be a positive integer',
  })
  await t.rejects(connectPglite({ schema: 'bad-name' }), { name: 'TypeError' })
})

t.test('an unreachable PostgreSQL is a DatabaseUnavailableError (503)', async (t) => {
  const err = await connectPostgres({ connectionString: 'postgres://postgres@127.0.0.1:1/test' }).catch(
    (e: unknown) => e,
  )
  t.ok(err instanceof DatabaseUnavailableError)
  t.ok(isTriviumError(err))
  const body = toErrorBody(err as DatabaseUnavailableError)
  t.same(body, {
    statusCode: 503,
    code: 'TRV_SERVICE_UNAVAILABLE',
    error: 'ServiceUnavailableException',
    message: 'Database unavailable',
  })
  t.ok((err as { cause?: unknown }).cause, 'the original error is kept as cause')
})

t.test('queries after close are DatabaseUnavailableError on both engines', async (t) => {
  const pgClient = await connectPostgres({ connectionString: PG_URL })
  await pgClient.close()
  t.ok((await pgClient.query('SELECT 1').catch((e: unknown) => e)) instanceof DatabaseUnavailableError)
  t.ok(
    (await pgClient.transaction(async () => 1).catch((e: unknown) => e)) instanceof DatabaseUnavailableError,
  )
  const lite = await connectPglite()
  await lite.close()
  await lite.close() // idempotent
  t.ok((await lite.query('SELECT 1').catch((e: unknown) => e)) instanceof DatabaseUnavailableError)
})

t.test(
  'a server-side connection kill mid-session maps to DatabaseUnavailableError or recovers',
  async (t) => {
    const schema = randomSchema()
    t.teardown(() => dropSchema(schema))
    const client = await connectPostgres({ connectionString: PG_URL, schema, max: 1 })
    t.teardown(() => client.close())
    const err = await client
      .transaction(async (tx) => {
        await tx.query('SELECT pg_terminate_backend(pg_backend_pid())')
      })
      .catch((e: unknown) => e)
    t.ok(err instanceof DatabaseUnavailableError, 'the killed connection surfaces as 503-class')
    // the broken connection was discarded: the next query works on a fresh one
    t.same((await client.query('SELECT 1 AS one')).rows, [{ one: 1 }])
  },
)

t.test('pglite: dataDir persists across instances', async (t) => {
  const { mkdtemp, rm } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = await mkdtemp(join(tmpdir(), 'trivium-sql-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const a = await connectPglite({ dataDir: dir, schema: 'app' })
  await a.exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('x')")
  await a.close()
  const b = await connectPglite({ dataDir: dir, schema: 'app' })
  t.teardown(() => b.close())
  t.same((await b.query('SELECT v FROM kept')).rows, [{ v: 'x' }])
})

t.test('pglite: prepared fast path gives the rows, counts and errors of PGlite’s own query', async (t) => {
  const { PGlite } = await import('@electric-sql/pglite')
  const client = await connectPglite()
  t.teardown(() => client.close())
  const raw = await PGlite.create()
  t.teardown(() => raw.close())
  const ddl = `CREATE TABLE t (id serial PRIMARY KEY, i8 bigint, n numeric, b boolean, ts timestamptz, d date,
    j jsonb, js json, by bytea, arr text[], iarr int[], u uuid, f float8, txt text)`
  await client.exec(ddl)
  await raw.exec(ddl)
  const ins =
    'INSERT INTO t (i8, n, b, ts, d, j, js, by, arr, iarr, u, f, txt) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) RETURNING *'
  const values = [
    [
      9007199254740993n,
      '1.50',
      true,
      new Date('2024-01-02T03:04:05.678Z'),
      '2024-05-06',
      { a: [1, 'x'] },
      [1, 2],
      new Uint8Array([0, 1, 255]),
      ['a', 'b c', 'é"'],
      [1, 2],
      '123e4567-e89b-12d3-a456-426614174000',
      1.25,
      'héllo',
    ],
    [null, null, false, null, null, null, null, null, [], null, null, null, undefined],
  ]
  for (const v of values) {
    const mine = await client.query(ins, v)
    const theirs = await raw.query(ins, v)
    t.same(mine.rows, theirs.rows)
    t.equal(mine.rowCount, 1)
  }
  const mine = await client.query('SELECT * FROM t ORDER BY id')
  const theirs = await raw.query('SELECT * FROM t ORDER BY id')
  t.strictSame(mine.rows, theirs.rows)
  t.equal(mine.rowCount, 2)
  t.same(mine.rows[0], {
    id: 1,
    i8: 9007199254740993n,
    n: '1.50',
    b: true,
    ts: new Date('2024-01-02T03:04:05.678Z'),
    d: new Date('2024-05-06T00:00:00.000Z'),
    j: { a: [1, 'x'] },
    js: [1, 2],
    by: new Uint8Array([0, 1, 255]),
    arr: ['a', 'b c', 'é"'],
    iarr: [1, 2],
    u: '123e4567-e89b-12d3-a456-426614174000',
    f: 1.25,
    txt: 'héllo',
  })
  t.equal((await client.query('UPDATE t SET txt = $1', ['x'])).rowCount, 2)
  const e1 = (await client.query('INSERT INTO t (id) VALUES ($1)', [1]).catch((e: unknown) => e)) as Record<
    string,
    unknown
  >
  const e2 = (await raw.query('INSERT INTO t (id) VALUES ($1)', [1]).catch((e: unknown) => e)) as Record<
    string,
    unknown
  >
  t.equal(e1.constructor, e2.constructor, 'the same DatabaseError class')
  t.same(
    { ...e1, message: (e1 as unknown as Error).message },
    { ...e2, message: (e2 as unknown as Error).message },
  )
  t.equal(e1.code, '23505')
  t.equal(e1.constraint, 't_pkey')
})

t.test('pglite: prepared statements follow table changes, transactions and aborted commits', async (t) => {
  const client = await connectPglite()
  t.teardown(() => client.close())
  await client.exec('CREATE TABLE t (a integer)')
  await client.query('INSERT INTO t VALUES ($1)', [1])
  t.same((await client.query('SELECT * FROM t')).rows, [{ a: 1 }])
  // the same text after the table changed shape: prepared again, new columns
  await client.exec('ALTER TABLE t ADD COLUMN b text')
  t.same((await client.query('SELECT * FROM t')).rows, [{ a: 1, b: null }])
  await client.transaction(async (tx) => {
    await tx.query('ALTER TABLE t ADD COLUMN c integer DEFAULT 7')
    t.same((await tx.query('SELECT * FROM t')).rows, [{ a: 1, b: null, c: 7 }])
  })
  t.same((await client.query('SELECT * FROM t')).rows, [{ a: 1, b: null, c: 7 }])
  // a query issued while a transaction is open waits for it: it never runs inside it
  const tx = client.transaction(async (tx) => {
    await tx.query('INSERT INTO t (a) VALUES ($1)', [2])
    await new Promise((r) => setTimeout(r, 20))
    throw new Error('undo')
  })
  const outside = client.query('INSERT INTO t (a) VALUES ($1)', [3])
  await t.rejects(tx, { message: 'undo' })
  await outside
  t.same((await client.query('SELECT a FROM t ORDER BY a')).rows, [{ a: 1 }, { a: 3 }])
  // a failed statement swallowed inside the transaction: COMMIT rolls back, as PGlite reports it
  const aborted = await client
    .transaction(async (tx) => {
      await tx.query('INSERT INTO t (a) VALUES ($1)', [4])
      await tx.query('SELECT nope FROM t').catch(() => {})
    })
    .catch((e: unknown) => e)
  t.match(aborted, { code: '25P02', message: 'Transaction was rolled back instead of committed' })
  t.same((await client.query('SELECT count(*)::int AS n FROM t')).rows, [{ n: 2 }])
  // a client kept after its transaction is refused
  let kept: { query: (s: string) => Promise<unknown> } | undefined
  await client.transaction(async (tx) => {
    kept = tx
  })
  await t.rejects(kept?.query('SELECT 1') as Promise<unknown>, { message: 'Transaction is closed' })
})

t.test('pglite: settings are given to PostgreSQL at start, shared_buffers 16MB by default', async (t) => {
  const a = await connectPglite()
  t.teardown(() => a.close())
  t.same((await a.query('SHOW shared_buffers')).rows, [{ shared_buffers: '16MB' }])
  const b = await connectPglite({ settings: { shared_buffers: '32MB', work_mem: '8MB' } })
  t.teardown(() => b.close())
  t.same((await b.query('SHOW shared_buffers')).rows, [{ shared_buffers: '32MB' }])
  t.same((await b.query('SHOW work_mem')).rows, [{ work_mem: '8MB' }])
  await t.rejects(connectPglite({ settings: { 'x; y': '1' } }), {
    name: 'TypeError',
    message: '@trivium/sql: invalid PostgreSQL setting "x; y"',
  })
})
