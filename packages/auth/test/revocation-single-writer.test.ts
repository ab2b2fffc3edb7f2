// The revocation table held whole in memory (one writer, e.g. embedded PGlite): lookups never query, every
// write reaches the table, and a new process reads the list back before serving.
import { randomBytes } from 'node:crypto'
import { SingleWriterSqlRevocationStore, SqlRevocationStore } from '@trivium/auth/sql'
import { connectPostgres, type SqlClient } from '@trivium/sql'
import t from 'tap'

const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'

/** A client that counts its queries. */
function counted(client: SqlClient): { client: SqlClient; queries: () => number } {
  let queries = 0
  const wrapped = Object.create(client) as SqlClient
  wrapped.query = ((...args: Parameters<SqlClient['query']>) => {
    queries++
    return client.query(...args)
  }) as SqlClient['query']
  return { client: wrapped, queries: () => queries }
}

t.test('lookups from memory, writes through, the list read back by the next process', async (t) => {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
  t.teardown(async () => {
    await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.close()
  })
  const { client, queries } = counted(sql)
  const first = new SingleWriterSqlRevocationStore({ client, sweepIntervalMs: 0 })
  await first.migrate()
  await first.load()
  await first.add('jti-1', 3600)
  await first.add('jti-forever')
  const before = queries()
  t.equal(first.containsSync('jti-1'), true)
  t.equal(await first.contains('jti-forever'), true)
  t.equal(await first.contains('jti-other'), false)
  t.equal(queries(), before, 'no lookup reached the database')

  // What the table holds is what the next process starts from.
  const table = new SqlRevocationStore({ client: sql })
  t.equal(await table.contains('jti-1'), true)
  const restarted = new SingleWriterSqlRevocationStore({ client: sql, sweepIntervalMs: 0 })
  await restarted.load()
  t.equal(restarted.containsSync('jti-1'), true)
  t.equal(restarted.containsSync('jti-forever'), true)

  await restarted.remove('jti-1')
  t.equal(restarted.containsSync('jti-1'), false)
  t.equal(await table.contains('jti-1'), false)
})

t.test('a write the database refuses still leaves the token refused in this process', async (t) => {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
  const store = new SingleWriterSqlRevocationStore({ client: sql, sweepIntervalMs: 0 })
  await store.migrate()
  await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await sql.close()
  await t.rejects(store.add('jti-2', 60))
  t.equal(store.containsSync('jti-2'), true)
})
