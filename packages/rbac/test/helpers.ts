// One fresh database per test on each engine: PGlite in memory, or a PostgreSQL schema
// `test_<random hex>` dropped at the end.
import { randomBytes } from 'node:crypto'
import { connectPglite, connectPostgres, type SqlClient } from '@trivium/sql'
import t from 'tap'

export const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'

export interface Teardown {
  teardown(fn: () => unknown): void
}

export interface Opened {
  client: SqlClient
  /** Another client on the same database (PostgreSQL only: a second pool on the same schema). */
  extra: () => Promise<SqlClient>
}

export interface Engine {
  name: 'postgres' | 'pglite'
  open(t: Teardown): Promise<Opened>
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
        extra: async () => {
          throw new Error('PGlite is a single in-process connection')
        },
      }
    },
  },
  {
    name: 'postgres',
    async open(t) {
      const schema = `test_${randomBytes(6).toString('hex')}`
      const opened: SqlClient[] = []
      const open = async () => {
        const c = await connectPostgres({ connectionString: PG_URL, schema, max: 5 })
        opened.push(c)
        return c
      }
      const client = await open()
      t.teardown(async () => {
        for (const c of opened) await c.close().catch(() => {})
        const admin = await connectPostgres({ connectionString: PG_URL, max: 1 })
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await admin.close()
      })
      return { client, extra: open }
    },
  },
]
