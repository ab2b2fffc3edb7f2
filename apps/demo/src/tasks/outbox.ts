// The transactional outbox of task events (PROTOCOL.md "Writes and their events"). A write stores its
// event in `demo_outbox` in the same transaction as the change, so a committed write always has its
// event and a write that did not commit has none; the relay below hands the rows to the event bus
// (Redis) and deletes them once published. Rights changes (role assignments, made by @trivium/rbac in
// statements of its own) go through it too, added right after the change. While Redis is down it retries with backoff, so the
// events arrive once it is back: at least once (a publish that timed out may still have been
// delivered), in id order per batch; subscribers drop a repeated event id (fanout.ts).
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
  /** First delay after a failure; doubles up to `maxBackoffMs` (defaults 100 / 5000 ms). */
  backoffMs?: number
  maxBackoffMs?: number
  /** How long a claimed batch belongs to this instance before another may take it (default 30 s). */
  leaseMs?: number
  batch?: number
}

/**
 * One relay per instance. Batches are claimed with a lease (one UPDATE … FOR UPDATE SKIP LOCKED), so
 * instances sharing a database do not publish the same rows, and no transaction is held while
 * publishing. `kick()` after a commit relays at once; the poll picks up whatever was left.
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

  constructor(sql: SqlClient, options: OutboxRelayOptions) {
    this.#sql = sql
    this.#o = { pollMs: 1000, backoffMs: 100, maxBackoffMs: 5000, leaseMs: 30_000, batch: 100, ...options }
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
          ? this.#o.pollMs
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
      for (;;) {
        const count = await this.#relayBatch()
        if (count < this.#o.batch || this.#closed) break
      }
      if (this.#failures > 0) this.#o.log.info('task events relayed again: the event bus is back')
      this.#failures = 0
    } catch (err) {
      if (this.#failures === 0)
        this.#o.log.warn({ err }, 'task events not relayed yet (kept in the outbox, retried with backoff)')
      this.#failures++
    }
  }

  /** Claims, publishes in id order and deletes one batch; the number of rows claimed. */
  async #relayBatch(): Promise<number> {
    const { rows } = await this.#sql.query<{ id: string; event: OutboxMessage }>(
      `UPDATE demo_outbox SET lease_until = now() + $1 * interval '1 millisecond'
       WHERE id IN (SELECT id FROM demo_outbox WHERE lease_until IS NULL OR lease_until < now()
                    ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id, event`,
      [this.#o.leaseMs, this.#o.batch],
    )
    rows.sort((a, b) => Number(a.id) - Number(b.id))
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
      const rest = rows.slice(published.length).map((r) => String(r.id))
      await this.#sql
        .query('UPDATE demo_outbox SET lease_until = NULL WHERE id = ANY($1::bigint[])', [rest])
        .catch(() => {}) // the lease passes on its own
      throw failure
    }
    return rows.length
  }
}
