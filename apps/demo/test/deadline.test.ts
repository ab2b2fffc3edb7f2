// PROTOCOL.md "Deadlines" end to end on PostgreSQL: `tasks.list` passes its call.signal to the query, so
// a call whose deadline passes while its SELECT waits is answered 504 and the statement is cancelled on
// the server — while the lock it waited for is still held, it no longer waits in pg_locks.
import pg from 'pg'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { backendConfig, POSTGRES_URL, registerAndLogin, startDemo } from './helpers.ts'

t.test(
  'a tasks.list stuck behind a lock is stopped at its 200 ms deadline and its query cancelled',
  async (t) => {
    const config = backendConfig('postgres+redis')
    const { app } = await startDemo(t, config)
    const { tokens } = await registerAndLogin(app, 'deadline_user')
    const table = `"${config.databaseSchema}".demo_tasks`

    // Another session holds the table: the demo's SELECT waits for the lock.
    const holder = new pg.Client({ connectionString: POSTGRES_URL })
    await holder.connect()
    const monitor = new pg.Client({ connectionString: POSTGRES_URL })
    await monitor.connect()
    t.teardown(async () => {
      await holder.query('ROLLBACK').catch(() => {})
      await holder.end()
      await monitor.end()
    })
    await holder.query('BEGIN')
    await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
    const waiting = async () =>
      (
        await monitor.query(
          'SELECT count(*)::int AS n FROM pg_locks WHERE relation = $1::regclass AND NOT granted',
          [table],
        )
      ).rows[0].n as number

    const res = await app.inject({
      url: '/tasks',
      headers: { authorization: `Bearer ${tokens.accessToken}`, 'trivium-timeout-ms': '200' },
    })
    t.equal(res.statusCode, 504)
    t.same(res.json(), {
      statusCode: 504,
      code: 'TRV_TIMEOUT',
      error: 'TimeoutException',
      message: 'Deadline of 200 ms exceeded',
      requestId: res.json().requestId,
    })
    // The cancel is sent when the deadline passes; wait for the server to act on it (lock still held).
    const end = Date.now() + waitBound(10_000)
    while ((await waiting()) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
    t.equal(await waiting(), 0, 'the SELECT no longer waits for the lock: cancelled')

    await holder.query('ROLLBACK')
    const after = await app.inject({
      url: '/tasks',
      headers: { authorization: `Bearer ${tokens.accessToken}` },
    })
    t.equal(after.statusCode, 200, 'the pool goes on serving')
  },
)
