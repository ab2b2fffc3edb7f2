// SqlRevocationStore under a burst of lookups (issue 42: thousands of `tasks.watch` calls starting at
// once each asked the table, the pool's wait ran out and they were answered 503): lookups made while the
// store's queries run go together in the next query, and each is still answered by a query sent after it
// began, so a revocation that committed before a lookup began is always seen. Real PostgreSQL.
import { randomBytes } from 'node:crypto'
import { migrateAuth, SqlRevocationStore } from '@trivium/auth/sql'
import { connectPostgres, type SqlClient } from '@trivium/sql'
import t, { type Test } from 'tap'

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** The store's client, counting the statements it sends (every one still runs on PostgreSQL). */
function counting(sql: SqlClient): { client: SqlClient; queries: () => number } {
  let queries = 0
  const client = Object.create(sql) as SqlClient
  client.query = (text, params, options) => {
    queries++
    return sql.query(text, params, options)
  }
  return { client, queries: () => queries }
}

/** A client on a schema of its own (dropped at the end) with a pool of `max` connections. */
async function database(t: Test, max: number): Promise<SqlClient> {
  const schema = `auth_lookups_${randomBytes(5).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max })
  t.teardown(async () => {
    await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.close()
  })
  return sql
}

t.test('a burst of lookups on a pool of 2: few queries, every answer right, no pool timeout', async (t) => {
  const sql = await database(t, 2)
  await migrateAuth(sql)
  const { client, queries } = counting(sql)
  const store = new SqlRevocationStore({ client })
  for (let i = 0; i < 50; i += 2) await store.add(`jti-${i}`, 3600)
  await store.add('expired', 3600)
  await sql.query(`UPDATE revoked_tokens SET expires_at = now() - interval '1 second' WHERE jti = 'expired'`)
  const before = queries()
  const ids = Array.from({ length: 2000 }, (_, i) => (i === 1999 ? 'expired' : `jti-${i % 100}`))
  const answers = await Promise.all(ids.map((id) => store.contains(id)))
  const sent = queries() - before
  const wrong = ids.filter(
    (id, i) => answers[i] !== (id !== 'expired' && Number(id.slice(4)) % 2 === 0 && Number(id.slice(4)) < 50),
  )
  t.same(wrong, [], 'each lookup answers for its own id (revoked, not revoked, expired)')
  t.ok(sent <= 3, `2,000 lookups sent ${sent} queries (one each before)`)
})

t.test('a revocation committed before a lookup began is seen, even while a query is running', async (t) => {
  const sql = await database(t, 4)
  await migrateAuth(sql)
  const store = new SqlRevocationStore({ client: sql })
  const other = new SqlRevocationStore({ client: sql }) // another instance writing the same table
  for (let round = 0; round < 20; round++) {
    const jti = `r${round}`
    // Two lookups keep the store's queries busy; the revocation commits meanwhile (another writer);
    // a lookup begun after the commit must answer true although queries begun before it are running.
    const busy = [store.contains(jti), store.contains(jti)]
    await other.add(jti, 3600)
    const after = await store.contains(jti)
    t.equal(after, true, `round ${round}: the lookup begun after the commit sees it`)
    await Promise.all(busy)
  }
})

t.test(
  'a failed query fails every lookup of its batch (fail closed), and the next lookups run',
  async (t) => {
    const sql = await database(t, 2)
    // No migration: the table does not exist, so every query fails.
    const store = new SqlRevocationStore({ client: sql })
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.contains(`x${i}`)))
    t.equal(results.filter((r) => r.status === 'rejected').length, 20, 'no lookup answers "not revoked"')
    await migrateAuth(sql)
    await store.add('x1', 3600)
    t.same(await Promise.all([store.contains('x1'), store.contains('x2')]), [true, false])
  },
)
