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
    code: 'TRV_SQL_SCHEMA',
  })
  await t.rejects(connectPostgres({}), {
    message: '@trivium/sql: connectPostgres needs a connectionString or a pool',
    code: 'TRV_SQL_POSTGRES_CONNECTION',
  })
  await t.rejects(connectPostgres({ connectionString: PG_URL, max: 0 }), {
    message: '@trivium/sql: max must be a positive integer',
    code: 'TRV_SQL_POOL_MAX',
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
