// Issue 44: the embedded engine's fast path keeps nothing per call. Before, every exchange's answers
// (DataRow, CommandComplete, ReadyForQuery) were parsed into PGlite's result collector, reachable from
// the PGlite instance and replaced only by PGlite's own query/exec: ~290 B per one-row SELECT, forever.
import { connectPglite } from '@trivium/sql'
import t from 'tap'
import { retainedPerUnit } from '../../../scripts/test/heap.ts'

const CALLS = 20_000
/**
 * Bytes per call the heap may grow by: the leak was 290–305 B per call; after the fix a standalone script
 * reads 0.2–2 B over 20–40k calls, this file up to ~18 (the collector's noise, the table's first pages).
 */
const BOUND = 64

t.test(
  '20 000 fast-path calls (SELECT, INSERT, UPDATE, in and out of transactions) keep no memory',
  async (t) => {
    const client = await connectPglite()
    t.teardown(() => client.close())
    await client.exec('CREATE TABLE t (id serial PRIMARY KEY, v text)')
    await client.query('INSERT INTO t (v) VALUES ($1)', ['first'])
    const select = 'SELECT id, v FROM t WHERE id = $1'
    const calls = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const r = await client.query<{ id: number; v: string }>(select, [1])
        if (r.rows[0]?.v !== 'first') throw new Error(`unexpected row ${JSON.stringify(r.rows)}`)
      }
    }
    await calls(2_000) // warm-up: compiled code, PGlite's buffers at their size
    const select1 = await retainedPerUnit(CALLS, () => calls(CALLS))
    t.ok(select1 < BOUND, `one-row SELECT: ${select1.toFixed(1)} B per call (< ${BOUND})`)

    const writes = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i += 10) {
        await client.transaction(async (tx) => {
          for (let j = 0; j < 5; j++) await tx.query('UPDATE t SET v = $1 WHERE id = $2', ['first', 1])
        })
        for (let j = 0; j < 5; j++) await client.query('INSERT INTO t (v) VALUES ($1) RETURNING id', ['x'])
        await client.query('DELETE FROM t WHERE v = $1', ['x'])
      }
    }
    await writes(4_000)
    // Per call: 10 statements plus BEGIN/COMMIT and the DELETE per 10; the table stays at one row.
    const write1 = await retainedPerUnit(CALLS, () => writes(CALLS))
    t.ok(write1 < BOUND, `INSERT/UPDATE/DELETE, transactions: ${write1.toFixed(1)} B per call (< ${BOUND})`)
    t.equal((await client.query('SELECT count(*)::int AS n FROM t')).rows[0]?.n, 1)
  },
)
