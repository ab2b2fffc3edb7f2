// Test helpers: one fresh, isolated database per test on each engine.
// PostgreSQL: a schema `test_<random hex>` dropped at the end; PGlite: a new in-memory instance.
import { randomBytes } from 'node:crypto'
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import pg from 'pg'
import t from 'tap'

export const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'

export interface Engine {
  name: 'postgres' | 'pglite'
  /** A client on a fresh database/schema; `extra()` opens a second client on the same one. */
  open(t: Teardown): Promise<{ client: SqlClient; schema: string; extra: () => Promise<SqlClient> }>
}

/** The part of a tap test the helpers use. */
export interface Teardown {
  teardown(fn: () => unknown): void
}

export function randomSchema(): string {
  return `test_${randomBytes(6).toString('hex')}`
}

export async function dropSchema(schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_URL })
  await admin.connect()
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await admin.end()
  }
}

let shared: Promise<SqlClient> | undefined
function sharedPglite(): Promise<SqlClient> {
  if (shared === undefined) {
    shared = connectPglite()
    t.teardown(async () => (await shared)?.close())
  }
  return shared
}

export const engines: Engine[] = [
  {
    name: 'pglite',
    async open() {
      // One embedded database per test file (starting PGlite costs seconds of CPU): tests in a file
      // run one after another, and each starts from an empty public schema.
      const client = await sharedPglite()
      await client.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public; SET search_path TO public')
      return {
        client,
        schema: 'public',
        extra: async () => {
          throw new Error('PGlite is a single in-process connection')
        },
      }
    },
  },
  {
    name: 'postgres',
    async open(t) {
      const schema = randomSchema()
      const opened: SqlClient[] = []
      const open = async () => {
        const c = await connectPostgres({ connectionString: PG_URL, schema, max: 4 })
        opened.push(c)
        return c
      }
      const client = await open()
      t.teardown(async () => {
        for (const c of opened) await c.close().catch(() => {})
        await dropSchema(schema)
      })
      return { client, schema, extra: open }
    },
  },
]
