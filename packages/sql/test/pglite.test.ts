// The PGlite engine's fast path (prepared statements, one exchange per query), its ordering against
// PGlite's own calls and transactions, and its start settings.
import { connectPglite, type SqlClient } from '@trivium/sql'
import t, { type Test } from 'tap'
import { engines } from './helpers.ts'

/**
 * The file's one PGlite with default settings (test/helpers.ts: each test starts from an empty public schema),
 * for the tests that need no engine of their own: each connectPglite() is an initdb in WebAssembly, ~5 s of
 * CPU. Statements a test prepares may already be prepared by an earlier test, on tables since dropped: the
 * client prepares again when a table changes (the second test).
 */
async function defaultClient(t: Test): Promise<SqlClient> {
  const pglite = engines.find((e) => e.name === 'pglite')
  if (!pglite) throw new Error('no pglite engine in test/helpers.ts')
  return (await pglite.open(t)).client
}

t.test('pglite: prepared fast path gives the rows, counts and errors of PGlite’s own query', async (t) => {
  const { PGlite } = await import('@electric-sql/pglite')
  const client = await defaultClient(t)
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
  const client = await defaultClient(t)
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
  const a = await defaultClient(t)
  t.same((await a.query('SHOW shared_buffers')).rows, [{ shared_buffers: '16MB' }])
  const b = await connectPglite({ settings: { shared_buffers: '32MB', work_mem: '8MB' } })
  t.teardown(() => b.close())
  t.same((await b.query('SHOW shared_buffers')).rows, [{ shared_buffers: '32MB' }])
  t.same((await b.query('SHOW work_mem')).rows, [{ work_mem: '8MB' }])
  await t.rejects(connectPglite({ settings: { 'x; y': '1' } }), {
    name: 'TypeError',
    message: '@trivium/sql: invalid PostgreSQL setting "x; y"',
    code: 'TRV_SQL_PGLITE_SETTING',
  })
})

t.test('pglite: a statement through PGlite’s own query never interleaves with prepared ones', async (t) => {
  const client = await defaultClient(t)
  await client.exec('CREATE TABLE t (a integer)')
  // SET and SHOW are not prepared (they go through PGlite in several exchanges); the prepared
  // queries fired between those exchanges wait instead of breaking them.
  const slow: Promise<unknown>[] = []
  const fast: Promise<{ rows: unknown[] }>[] = []
  for (let i = 0; i < 40; i++) {
    if (i % 10 === 0) slow.push(client.query(`SET application_name = 'app${i}'`))
    if (i % 10 === 5) slow.push(client.query('SHOW application_name'))
    fast.push(client.query('SELECT $1::int AS i', [i]))
    if (i % 7 === 0) fast.push(client.transaction((tx) => tx.query('INSERT INTO t VALUES ($1)', [i])))
    await null
  }
  await Promise.all(slow)
  const done = await Promise.all(fast)
  t.same(
    done.filter((r) => r.rows.length > 0).map((r) => r.rows[0]),
    Array.from({ length: 40 }, (_, i) => ({ i })),
  )
  t.same((await client.query('SELECT count(*)::int AS n FROM t')).rows, [{ n: 6 }])
  t.same((await client.query('SHOW application_name')).rows, [{ application_name: 'app30' }])
})

t.test('pglite: a fast-path query is answered inside the call (PGlite’s synchronous exchange)', async (t) => {
  // The fast path needs no lock because each exchange finishes before the call returns: it uses
  // PGlite's execProtocolRawSync, documented as synchronous (not execProtocolRawStream's Promise).
  const client = await defaultClient(t)
  await client.exec('CREATE TABLE big (id integer, payload text)')
  await client.query('SELECT $1::int AS i', [0]) // prepared
  const pending = Symbol('pending')
  const answered = await Promise.race([client.query('SELECT $1::int AS i', [7]), Promise.resolve(pending)])
  t.same(answered, { rows: [{ i: 7 }], rowCount: 1 }, 'settled before any other promise')
  // An answer larger than PGlite's receive buffer (a few MB of rows) comes back whole.
  await client.query("INSERT INTO big SELECT g, repeat('x', 1000) FROM generate_series(1, $1::int) g", [5000])
  const rows = await client.query<{ id: number; payload: string }>('SELECT id, payload FROM big ORDER BY id')
  t.equal(rows.rows.length, 5000)
  t.same(rows.rows[4999], { id: 5000, payload: 'x'.repeat(1000) })
})

t.test('pglite: initdbInChildProcess initialises a new dataDir apart, then opens and keeps it', async (t) => {
  const { existsSync } = await import('node:fs')
  const { mkdtemp, rm } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = await mkdtemp(join(tmpdir(), 'trivium-sql-child-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  t.notOk(existsSync(join(dir, 'PG_VERSION')))
  const a = await connectPglite({ dataDir: dir, initdbInChildProcess: true })
  t.ok(existsSync(join(dir, 'PG_VERSION')), 'initialised')
  await a.exec("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('x')")
  t.same((await a.query('SHOW shared_buffers')).rows, [{ shared_buffers: '16MB' }])
  await a.close()
  // an existing directory is opened as it is (no second initdb)
  const b = await connectPglite({ dataDir: dir, initdbInChildProcess: true })
  t.teardown(() => b.close())
  t.same((await b.query('SELECT v FROM kept')).rows, [{ v: 'x' }])
})
