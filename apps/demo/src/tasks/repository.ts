// Tasks persisted in SQL (PGlite by default, PostgreSQL with DATABASE_URL). Keyset pagination by id, oldest or newest first.
import { IDEMPOTENCY_TABLE_SQL, NotFoundException, ValidationException } from '@trivium/core'
import { type Migration, runMigrations, type SqlClient } from '@trivium/sql'
import type { TaskEventKind } from './events.js'
import { addToOutbox, OUTBOX_RELAY_TABLE_SQL, OUTBOX_TABLE_SQL } from './outbox.js'

export interface TaskRecord {
  id: number
  title: string
  description?: string | null
  done: boolean
  tags: string[]
  ownerId: number
  createdAt: Date
  updatedAt: Date
  /** The owner's username; null once the account is gone. */
  ownerName: string | null
}

export interface TaskFilter {
  newestFirst?: boolean | null
  done?: boolean | null
  tag?: string | null
  limit?: number | null
  cursor?: string | null
}

/**
 * What stops a write: the call (`TriviumCall` is one). `throwIfAborted` reads the deadline from the
 * clock: the embedded PGlite runs in this thread, so no timer can fire while a write runs.
 */
export interface WriteStop {
  readonly signal: AbortSignal
  throwIfAborted(): void
}

export interface TaskChanges {
  title?: string | null
  description?: string | null
  done?: boolean | null
  tags?: readonly string[] | null
}

const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'tasks and files',
    sql: `
      CREATE TABLE IF NOT EXISTS demo_tasks (
        id serial PRIMARY KEY,
        title text NOT NULL,
        description text,
        done boolean NOT NULL DEFAULT false,
        tags text[] NOT NULL DEFAULT '{}',
        owner_id integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX IF NOT EXISTS demo_tasks_tags ON demo_tasks USING gin (tags);
      CREATE TABLE IF NOT EXISTS demo_files (
        id serial PRIMARY KEY,
        owner_id integer NOT NULL,
        filename text NOT NULL,
        content_type text,
        size integer NOT NULL,
        data bytea NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
  {
    // @trivium/rbac cannot assume where users live; in this service they are @trivium/auth's
    // auth_users, so the database itself refuses a role for a user that does not exist (a role
    // pre-assigned to a future id would be inherited by whoever registers under it). Assignments to
    // ids that never existed are removed first: they are exactly what this closes.
    version: 2,
    name: 'user_roles reference auth_users',
    sql: `
      DELETE FROM user_roles WHERE NOT EXISTS (SELECT 1 FROM auth_users u WHERE u.id = user_roles.user_id);
      ALTER TABLE user_roles ADD CONSTRAINT demo_user_roles_user_fk
        FOREIGN KEY (user_id) REFERENCES auth_users (id) ON DELETE CASCADE;`,
  },
  {
    // Task events written with their change (outbox.ts), and the answers kept for idempotency keys.
    version: 3,
    name: 'task event outbox and idempotency keys',
    sql: OUTBOX_TABLE_SQL + IDEMPOTENCY_TABLE_SQL,
  },
  {
    // One relay at a time publishes the outbox, so events keep one order across instances (outbox.ts).
    version: 4,
    name: 'outbox relay lease',
    sql: OUTBOX_RELAY_TABLE_SQL,
  },
]

export const MAX_PAGE = 100
export const DEFAULT_PAGE = 20
const MAX_TITLE = 200
const MAX_DESCRIPTION = 5000
const MAX_TAGS = 20

interface TaskRow {
  id: number
  title: string
  description: string | null
  done: boolean
  tags: string[]
  owner_id: number
  created_at: Date
  updated_at: Date
  owner_name: string | null
}

/** A task row with its owner's username (the page shows names, not ids): every query selects it. */
const OWNER_NAME = '(SELECT username FROM auth_users WHERE auth_users.id = demo_tasks.owner_id) AS owner_name'

function toRecord(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    done: row.done,
    tags: row.tags ?? [],
    ownerId: row.owner_id,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    ownerName: row.owner_name ?? null,
  }
}

function encodeCursor(id: number): string {
  return Buffer.from(`t:${id}`).toString('base64url')
}

const MAX_ID = 2 ** 31 - 1 // ids are PostgreSQL `integer` (serial)

/** The id a cursor of `encodeCursor` carries; anything else (also an id past int32) is a 400, never SQL's. */
function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  const m = /^t:([1-9]\d{0,9})$/.exec(text)
  const id = m ? Number(m[1]) : 0
  if (id < 1 || id > MAX_ID || encodeCursor(id) !== cursor)
    throw new ValidationException('Invalid cursor', [
      { field: 'cursor', message: 'is not a cursor from this service' },
    ])
  return id
}

/** Length in characters (code points), as JSON Schema's maxLength counts. */
function characters(text: string): number {
  let n = 0
  for (const _ of text) n++
  return n
}

/** Ids are PostgreSQL `serial`: 1 … 2^31-1 (the model's int32 already bounds the top). */
export function checkId(id: number): number {
  if (id < 1)
    throw new ValidationException('Invalid id: must be a positive integer', [
      { field: 'id', message: 'must be a positive integer' },
    ])
  return id
}

// The rules below are the ones schema/trivium.json declares for the OpenAPI document (a test
// compares the two): title not blank and at most 200 characters as sent, description at most 5000
// characters, at most 20 tags, page size 1 … 100. Refused as the schema's own checks are (core's rule):
// `Invalid <request model>: <field> <message>`, so one field has one message prefix.
function checkFields(changes: TaskChanges, model: 'CreateTask' | 'UpdateTask'): void {
  const details: { field: string; message: string }[] = []
  if (changes.title !== undefined && changes.title !== null) {
    if (changes.title.trim().length === 0) details.push({ field: 'title', message: 'must not be empty' })
    if (characters(changes.title) > MAX_TITLE)
      details.push({ field: 'title', message: `must be at most ${MAX_TITLE} characters` })
  }
  if (changes.description && characters(changes.description) > MAX_DESCRIPTION) {
    details.push({ field: 'description', message: `must be at most ${MAX_DESCRIPTION} characters` })
  }
  if (changes.tags && changes.tags.length > MAX_TAGS)
    details.push({ field: 'tags', message: `at most ${MAX_TAGS} tags` })
  const [first] = details
  if (first !== undefined)
    throw new ValidationException(`Invalid ${model}: ${first.field} ${first.message}`, details)
}

/** The task a query by id found, or the 404 every transport answers. */
function found<T>(rows: readonly T[], id: number): T {
  const [row] = rows
  if (row === undefined) throw new NotFoundException(`Task ${id} not found`)
  return row
}

/** The row an INSERT … RETURNING wrote (PostgreSQL returns one per inserted row, or throws). */
function returned<T>(rows: readonly T[]): T {
  const [row] = rows
  if (row === undefined) throw new Error('INSERT … RETURNING returned no row')
  return row
}

/**
 * Every change is written with its event (the outbox) in one transaction; `committed` is called after
 * each such commit (the relay publishes at once instead of at its next poll).
 */
export class TaskRepository {
  constructor(
    private readonly sql: SqlClient,
    private readonly committed: () => void = () => {},
  ) {}

  /**
   * Runs `change` and stores the event of the task it returns, in one transaction. `stop` (the call)
   * stops it: checked before and as the last step before COMMIT, the deadline read from the clock, so a
   * call whose deadline passed writes nothing (PROTOCOL.md "Deadlines"); its signal also cancels a
   * running statement on PostgreSQL.
   */
  private async withEvent(
    kind: TaskEventKind,
    change: (tx: SqlClient) => Promise<TaskRecord>,
    stop: WriteStop | undefined,
  ) {
    stop?.throwIfAborted()
    const task = await this.sql.transaction(async (tx) => {
      const record = await change(tx)
      await addToOutbox(tx, kind, record)
      stop?.throwIfAborted()
      return record
    })
    this.committed()
    return task
  }

  migrate(): Promise<void> {
    return runMigrations(this.sql, 'demo', MIGRATIONS)
  }

  /** `signal` (the call's) stops the query: cancelled on PostgreSQL, checked around it on PGlite. */
  async list(
    filter: TaskFilter,
    signal?: AbortSignal,
  ): Promise<{ items: TaskRecord[]; nextCursor?: string }> {
    const limit = filter.limit ?? DEFAULT_PAGE
    if (limit < 1 || limit > MAX_PAGE)
      throw new ValidationException(`Invalid limit: must be between 1 and ${MAX_PAGE}`, [
        { field: 'limit', message: `must be between 1 and ${MAX_PAGE}` },
      ])
    const newest = filter.newestFirst === true
    const where: string[] = []
    const params: unknown[] = []
    if (filter.done !== undefined && filter.done !== null) {
      params.push(filter.done)
      where.push(`done = $${params.length}`)
    }
    if (filter.tag) {
      params.push([filter.tag])
      where.push(`tags @> $${params.length}::text[]`)
    }
    if (filter.cursor !== undefined && filter.cursor !== null) {
      params.push(decodeCursor(filter.cursor))
      where.push(newest ? `id < $${params.length}` : `id > $${params.length}`)
    }
    params.push(limit + 1)
    const { rows } = await this.sql.query<TaskRow>(
      `SELECT *, ${OWNER_NAME} FROM demo_tasks ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${newest ? 'DESC' : 'ASC'} LIMIT $${params.length}`,
      params,
      { signal },
    )
    const items = rows.slice(0, limit).map(toRecord)
    const last = items.at(-1)
    return rows.length > limit && last !== undefined
      ? { items, nextCursor: encodeCursor(last.id) }
      : { items }
  }

  async get(id: number, signal?: AbortSignal): Promise<TaskRecord> {
    checkId(id)
    const { rows } = await this.sql.query<TaskRow>(
      `SELECT *, ${OWNER_NAME} FROM demo_tasks WHERE id = $1`,
      [id],
      { signal },
    )
    return toRecord(found(rows, id))
  }

  async create(
    ownerId: number,
    input: { title: string; description?: string | null; tags?: readonly string[] | null },
    stop?: WriteStop,
  ) {
    checkFields(input, 'CreateTask')
    return this.withEvent(
      'created',
      async (tx) => {
        const { rows } = await tx.query<TaskRow>(
          `INSERT INTO demo_tasks (title, description, tags, owner_id) VALUES ($1, $2, $3, $4) RETURNING *, ${OWNER_NAME}`,
          [input.title.trim(), input.description ?? null, input.tags ?? [], ownerId],
          { signal: stop?.signal },
        )
        return toRecord(returned(rows))
      },
      stop,
    )
  }

  async update(id: number, changes: TaskChanges, stop?: WriteStop): Promise<TaskRecord> {
    checkId(id)
    checkFields(changes, 'UpdateTask')
    return this.withEvent(
      'updated',
      async (tx) => {
        const { rows } = await tx.query<TaskRow>(
          `UPDATE demo_tasks SET
         title = COALESCE($2, title),
         description = CASE WHEN $3::boolean THEN $4 ELSE description END,
         done = COALESCE($5, done),
         tags = COALESCE($6, tags),
         updated_at = now()
       WHERE id = $1 RETURNING *, ${OWNER_NAME}`,
          [
            id,
            changes.title?.trim() ?? null,
            changes.description !== undefined,
            changes.description ?? null,
            changes.done ?? null,
            changes.tags ?? null,
          ],
          { signal: stop?.signal },
        )
        return toRecord(found(rows, id))
      },
      stop,
    )
  }

  async delete(id: number, stop?: WriteStop): Promise<TaskRecord> {
    checkId(id)
    return this.withEvent(
      'deleted',
      async (tx) => {
        const { rows } = await tx.query<TaskRow>(
          `DELETE FROM demo_tasks WHERE id = $1 RETURNING *, ${OWNER_NAME}`,
          [id],
          {
            signal: stop?.signal,
          },
        )
        return toRecord(found(rows, id))
      },
      stop,
    )
  }

  /** `stop` as in `withEvent`: checked before and as the last step before COMMIT. */
  async storeFile(
    ownerId: number,
    file: { filename: string; contentType?: string | null; data: Uint8Array },
    stop?: WriteStop,
  ) {
    stop?.throwIfAborted()
    const row = await this.sql.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: number; filename: string; size: number; created_at: Date }>(
        `INSERT INTO demo_files (owner_id, filename, content_type, size, data) VALUES ($1, $2, $3, $4, $5)
         RETURNING id, filename, size, created_at`,
        [ownerId, file.filename, file.contentType ?? null, file.data.byteLength, file.data],
        { signal: stop?.signal },
      )
      stop?.throwIfAborted() // the last step before COMMIT
      return returned(rows)
    })
    return { id: row.id, filename: row.filename, size: row.size, createdAt: new Date(row.created_at) }
  }
}
