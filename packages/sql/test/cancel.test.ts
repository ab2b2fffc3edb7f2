// QueryOptions.signal (PROTOCOL.md "Deadlines"): a call's deadline stops its database work. On real
// PostgreSQL the running statement is cancelled on the server: `SELECT pg_sleep(10)` stopped by a 200 ms
// deadline is gone from pg_stat_activity; on PGlite the signal is honoured before and after a statement.
import { randomBytes } from 'node:crypto'
import { connectPglite, connectPostgres } from '@trivium/sql'
import pg from 'pg'
import t, { type Test } from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { PG_URL } from './helpers.ts'

/**
 * A deadline whose reason is the error the caller gets (as call.signal's TimeoutException). It fires
 * `ms` after it is made, but never before `started()` holds: on a loaded machine the statement may not
 * have reached the server in 200 ms, and a signal aborted before the statement is sent proves nothing
 * about cancelling one that runs.
 */
function deadline(
  ms: number,
  started: () => Promise<boolean>,
): { signal: AbortSignal; reason: Error; fired: Promise<void> } {
  const controller = new AbortController()
  const reason = new Error(`Deadline of ${ms} ms exceeded`)
  const fired = (async () => {
    await new Promise((r) => setTimeout(r, ms))
    await until(started, 'the statement to run')
    controller.abort(reason)
  })()
  return { signal: controller.signal, reason, fired }
}

async function until(cond: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + waitBound(timeoutMs)
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

async function monitor(t: Test): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  t.teardown(() => admin.end())
  return admin
}

/** Rows of pg_stat_activity running a statement that contains `marker`. */
async function running(admin: pg.Client, marker: string): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
    [`%${marker}%`],
  )
  return rows[0].n
}

for (const pool of ['own', 'caller'] as const) {
  t.test(
    `postgres (${pool} pool): a 200 ms deadline cancels SELECT pg_sleep(10) on the server`,
    async (t) => {
      const admin = await monitor(t)
      const callerPool = pool === 'caller' ? new pg.Pool({ connectionString: PG_URL, max: 2 }) : undefined
      const db = await connectPostgres(
        callerPool ? { pool: callerPool } : { connectionString: PG_URL, max: 2 },
      )
      t.teardown(async () => {
        await db.close()
        await callerPool?.end()
      })
      const marker = `trivium_cancel_${randomBytes(4).toString('hex')}`
      const { signal, reason, fired } = deadline(200, async () => (await running(admin, marker)) === 1)
      const query = db.query(`SELECT pg_sleep(10) AS ${marker}`, [], { signal })
      query.catch(() => {})
      await fired
      // Gone long before its 10 s (5 s is the bound: a statement left running would still be there).
      await until(
        async () => (await running(admin, marker)) === 0,
        'the statement to leave pg_stat_activity',
        5000,
      )
      t.equal(await running(admin, marker), 0, 'no longer in pg_stat_activity')
      t.equal(await query.catch((e) => e), reason, "the query rejects with the signal's reason")
      // The connection is healthy and goes on serving (the pool was not left with a cancelled statement).
      t.same((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }])
      t.same((await db.query('SELECT 2 AS two', [], { signal: new AbortController().signal })).rows, [
        { two: 2 },
      ])
    },
  )
}

t.test('postgres: a statement inside a transaction is cancelled; the transaction rolls back', async (t) => {
  const admin = await monitor(t)
  const schema = `test_${randomBytes(6).toString('hex')}`
  const db = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
  t.teardown(async () => {
    await db.exec(`DROP SCHEMA "${schema}" CASCADE`)
    await db.close()
  })
  await db.exec('CREATE TABLE items (id int)')
  const marker = `trivium_tx_${randomBytes(4).toString('hex')}`
  const { signal, reason, fired } = deadline(200, async () => (await running(admin, marker)) === 1)
  const transaction = db.transaction(async (tx) => {
    await tx.query('INSERT INTO items VALUES (1)')
    await tx.query(`SELECT pg_sleep(10) AS ${marker}`, [], { signal })
  })
  transaction.catch(() => {})
  await fired
  await until(async () => (await running(admin, marker)) === 0, 'the statement to be cancelled', 5000)
  t.equal(await transaction.catch((e) => e), reason)
  t.same((await db.query('SELECT count(*)::int AS n FROM items')).rows, [{ n: 0 }], 'rolled back')
})

t.test('an already aborted signal runs nothing; an unaborted one changes nothing', async (t) => {
  const db = await connectPostgres({ connectionString: PG_URL, max: 1 })
  const lite = await connectPglite()
  t.teardown(async () => {
    await db.close()
    await lite.close()
  })
  const reason = new Error('gone')
  for (const client of [db, lite]) {
    await t.rejects(
      client.query('SELECT 1', [], { signal: AbortSignal.abort(reason) }),
      reason,
      client.dialect,
    )
    t.same((await client.query('SELECT 1 AS one', [], { signal: new AbortController().signal })).rows, [
      { one: 1 },
    ])
  }
})
