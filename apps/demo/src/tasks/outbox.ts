// The transactional outbox of task events (PROTOCOL.md "Writes and their events"). A write stores its
// event in `demo_outbox` in the same transaction as the change, so a committed write always has its
// event and a write that did not commit has none; the relay below hands the rows to the event bus
// (Redis) and deletes them once published. Rights changes (role assignments, made by @trivium/rbac in
// statements of its own) go through it too, added right after the change. While Redis is down it retries with backoff, so the
// events arrive once it is back: at least once (a publish that timed out may still have been
// delivered), in id order across instances (one relay at a time holds the relay lease); subscribers drop a
// repeated event id (fanout.ts).
import { randomUUID } from 'node:crypto'
import type { SqlClient } from '@trivium/sql'
import type { FastifyBaseLogger } from 'fastify'
import type { TaskEventRecord } from './events.js'
import type { TaskRecord } from './repository.js'

export const OUTBOX_TABLE_SQL = `
  CREATE TABLE IF NOT EXISTS demo_outbox (
    id bigserial PRIMARY KEY,
    event jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz
  );` // lease_until: per-row leases before the relay lease below; unused, kept as migration 3 made it

/**
 * Who relays the outbox now: one row, held by one relay at a time until `lease_until`. Rows are published
 * in id order by whoever holds it, so the events of one database reach the bus in one order, whichever
 * instance wrote them (per-row leases let two instances publish neighbouring rows out of order).
 */
export const OUTBOX_RELAY_TABLE_SQL = `
  CREATE TABLE IF NOT EXISTS demo_outbox_relay (
    id int PRIMARY KEY CHECK (id = 1),
    holder text NOT NULL,
    lease_until timestamptz NOT NULL
  );`

/** The JSON form of an event (stored in the outbox, sent over Redis). */
export interface StoredTaskEvent {
  kind: TaskEventRecord['kind']
  at: string
  task: Omit<TaskRecord, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string }
}

export function toStored(event: TaskEventRecord): StoredTaskEvent {
  return {
    kind: event.kind,
    at: event.at.toISOString(),
    task: {
      ...event.task,
      createdAt: event.task.createdAt.toISOString(),
      updatedAt: event.task.updatedAt.toISOString(),
    },
  }
}

export function fromStored(event: StoredTaskEvent, id?: string): TaskEventRecord {
  return {
    ...(id === undefined ? {} : { id }),
    kind: event.kind,
    at: new Date(event.at),
    task: {
      ...event.task,
      createdAt: new Date(event.task.createdAt),
      updatedAt: new Date(event.task.updatedAt),
    },
  }
}

/** What an outbox row carries: a task event, or "this user's rights changed" for the other instances. */
export type OutboxMessage = StoredTaskEvent | { rightsChanged: number }

/** Adds the event of a change to the outbox: call with the transaction that makes the change. */
export async function addToOutbox(
  tx: SqlClient,
  kind: TaskEventRecord['kind'],
  task: TaskRecord,
): Promise<void> {
  await tx.query('INSERT INTO demo_outbox (event) VALUES ($1)', [
    JSON.stringify(toStored({ kind, task, at: new Date() })),
  ])
}

/** Adds a rights change of `userId` to the outbox (after the change committed). */
export async function addRightsChange(sql: SqlClient, userId: number): Promise<void> {
  await sql.query('INSERT INTO demo_outbox (event) VALUES ($1)', [JSON.stringify({ rightsChanged: userId })])
}

export interface OutboxRelayOptions {
  /** Publishes one row's message (with the row's id); rejects when the bus cannot take it. */
  publish: (message: OutboxMessage, id: string) => Promise<void>
  log: FastifyBaseLogger
  /** How often rows left by failures or other instances are looked for (default 1000 ms). */
  pollMs?: number
  /** How soon to try again while another instance holds the relay lease (default 20 ms). */
  busyRetryMs?: number
  /** First delay after a failure; doubles up to `maxBackoffMs` (defaults 100 / 5000 ms). */
  backoffMs?: number
  maxBackoffMs?: number
  /**
   * How long the relay lease belongs to this instance before another may take it (default 30 s; renewed
   * before every batch, given back at the end of each pass). An instance that dies holding it delays the
   * others' events by at most this long.
   */
  leaseMs?: number
  batch?: number
}

/**
 * One relay per instance. A pass first takes the relay lease (OUTBOX_RELAY_TABLE_SQL, one upsert), so
 * instances sharing a database do not publish the same rows nor overtake each other, and no transaction is
 * held while publishing. `kick()` after a commit relays at once (or soon after, when another instance holds
 * the lease); the poll picks up whatever was left.
 */
export class OutboxRelay {
  readonly #sql: SqlClient
  readonly #o: Required<Omit<OutboxRelayOptions, 'log' | 'publish'>> &
    Pick<OutboxRelayOptions, 'log' | 'publish'>
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #again = false
  #failures = 0
  #closed = false
  /** The last pass found the lease held by another instance: try again after `busyRetryMs`. */
  #busy = false
  readonly #holder = randomUUID()

  constructor(sql: SqlClient, options: OutboxRelayOptions) {
    this.#sql = sql
    this.#o = {
      pollMs: 1000,
      busyRetryMs: 20,
      backoffMs: 100,
      maxBackoffMs: 5000,
      leaseMs: 30_000,
      batch: 100,
      ...options,
    }
  }

  start(): void {
    this.kick()
  }

  /** Relays now (or right after the pass in progress); after a failure, at the end of the backoff. */
  kick(): void {
    if (this.#failures > 0 && this.#timer !== undefined) return
    this.#run()
  }

  #run(): void {
    if (this.#closed) return
    if (this.#running) {
      this.#again = true
      return
    }
    clearTimeout(this.#timer)
    this.#timer = undefined
    this.#running = this.#pass().finally(() => {
      this.#running = undefined
      if (this.#closed) return
      if (this.#again && this.#failures === 0) {
        this.#again = false
        this.#run()
        return
      }
      this.#again = false
      const delay =
        this.#failures === 0
          ? this.#busy
            ? this.#o.busyRetryMs
            : this.#o.pollMs
          : Math.min(this.#o.maxBackoffMs, this.#o.backoffMs * 2 ** (this.#failures - 1))
      this.#timer = setTimeout(() => {
        this.#timer = undefined
        this.#run()
      }, delay)
      this.#timer.unref()
    })
  }

  /** Stops relaying; rows not yet published stay for the next start (this or another instance). */
  async close(): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    await this.#running
  }

  async #pass(): Promise<void> {
    try {
      this.#busy = false
      let held = false
      for (;;) {
        const lease = await this.#takeLease()
        if (lease === 'nothing to relay') break
        if (lease === 'held elsewhere') {
          this.#busy = true
          break
        }
        held = true
        const count = await this.#relayBatch()
        if (count < this.#o.batch || this.#closed) break
      }
      if (held) await this.#giveLeaseBack()
      if (this.#failures > 0) this.#o.log.info('task events relayed again: the event bus is back')
      this.#failures = 0
    } catch (err) {
      if (this.#failures === 0)
        this.#o.log.warn({ err }, 'task events not relayed yet (kept in the outbox, retried with backoff)')
      this.#failures++
    }
  }

  /**
   * Takes or renews the relay lease when there is something to relay. An empty outbox is only read: an
   * idle instance's poll writes nothing (no row version, no statistics for PostgreSQL to flush).
   */
  async #takeLease(): Promise<'taken' | 'held elsewhere' | 'nothing to relay'> {
    const pending = await this.#sql.query('SELECT 1 FROM demo_outbox LIMIT 1')
    if (pending.rows.length === 0) return 'nothing to relay'
    const { rows } = await this.#sql.query(
      `INSERT INTO demo_outbox_relay (id, holder, lease_until)
       VALUES (1, $1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until
       WHERE demo_outbox_relay.holder = EXCLUDED.holder OR demo_outbox_relay.lease_until < now()
       RETURNING holder`,
      [this.#holder, this.#o.leaseMs],
    )
    return rows.length === 1 ? 'taken' : 'held elsewhere'
  }

  /** Ends this pass's lease so another instance's rows go out without waiting for it to pass. */
  async #giveLeaseBack(): Promise<void> {
    await this.#sql.query(
      `UPDATE demo_outbox_relay SET lease_until = now() - interval '1 millisecond' WHERE holder = $1`,
      [this.#holder],
    )
  }

  /** Publishes in id order and deletes one batch (the relay lease held); the number of rows read. */
  async #relayBatch(): Promise<number> {
    const { rows } = await this.#sql.query<{ id: string; event: OutboxMessage }>(
      'SELECT id, event FROM demo_outbox ORDER BY id LIMIT $1',
      [this.#o.batch],
    )
    const published: string[] = []
    let failure: unknown
    for (const row of rows) {
      try {
        await this.#o.publish(row.event, String(row.id))
        published.push(String(row.id))
      } catch (err) {
        failure = err
        break
      }
    }
    if (published.length > 0)
      await this.#sql.query('DELETE FROM demo_outbox WHERE id = ANY($1::bigint[])', [published])
    if (failure !== undefined) {
      await this.#giveLeaseBack().catch(() => {}) // else the lease passes on its own
      throw failure
    }
    return rows.length
  }
}
