import { appliedMigrations, type Migration, MigrationError, runMigrations } from '@trivium/sql'
import t from 'tap'
import { engines } from './helpers.ts'

const v1: Migration = {
  version: 1,
  name: 'create notes',
  sql: 'CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL); CREATE INDEX notes_body ON notes (body)',
}
const v2: Migration = { version: 2, name: 'add author', sql: 'ALTER TABLE notes ADD COLUMN author integer' }

for (const engine of engines) {
  t.test(`${engine.name}: migrations apply once, in order, and record themselves`, async (t) => {
    const { client } = await engine.open(t)
    t.same(await appliedMigrations(client, 'notes'), [], 'nothing before the table exists')
    await runMigrations(client, 'notes', [v2, v1]) // given out of order: applied by version
    await runMigrations(client, 'notes', [v1, v2]) // idempotent
    t.same(await appliedMigrations(client, 'notes'), [1, 2])
    const { rows } = await client.query<{
      component: string
      version: number
      name: string
      applied_at: Date
    }>('SELECT component, version, name, applied_at FROM trivium_migrations ORDER BY version')
    t.same(
      rows.map((r) => [r.component, r.version, r.name]),
      [
        ['notes', 1, 'create notes'],
        ['notes', 2, 'add author'],
      ],
    )
    t.ok(rows[0]?.applied_at instanceof Date)
    await client.query('INSERT INTO notes (body, author) VALUES ($1, $2)', ['hi', 7])
    // another component shares the table without interfering
    await runMigrations(client, 'other', [
      { version: 1, name: 'x', sql: 'CREATE TABLE other_x (id integer)' },
    ])
    t.same(await appliedMigrations(client, 'other'), [1])
    t.same(await appliedMigrations(client, 'notes'), [1, 2])
  })

  t.test(`${engine.name}: a failing migration leaves nothing behind`, async (t) => {
    const { client } = await engine.open(t)
    const bad: Migration = {
      version: 2,
      name: 'broken',
      sql: 'CREATE TABLE half (id integer); SELECT * FROM missing_table',
    }
    const err = await runMigrations(client, 'notes', [v1, bad]).catch((e: unknown) => e)
    t.ok(err instanceof MigrationError)
    t.match(
      (err as Error).message,
      /^@trivium\/sql: notes migration 2 \(broken\) failed: relation "missing_table" does not exist/,
    )
    t.equal((err as MigrationError).code, 'TRV_MIGRATION')
    t.same(await appliedMigrations(client, 'notes'), [], 'v1 rolled back with v2')
    const { rows } = await client.query<{ t: string | null }>(`SELECT to_regclass('notes')::text AS t`)
    t.same(rows, [{ t: null }])
    await runMigrations(client, 'notes', [v1])
    t.same(await appliedMigrations(client, 'notes'), [1])
  })

  t.test(`${engine.name}: a recorded version with another name is refused`, async (t) => {
    const { client } = await engine.open(t)
    await runMigrations(client, 'notes', [v1])
    await t.rejects(runMigrations(client, 'notes', [{ ...v1, name: 'renamed' }]), {
      message:
        '@trivium/sql: notes migration 1 is recorded as "create notes" but the code names it "renamed"',
    })
  })

  t.test(`${engine.name}: bad migration lists are refused before touching the database`, async (t) => {
    const { client } = await engine.open(t)
    await t.rejects(runMigrations(client, 'Bad Name', [v1]), {
      message: '@trivium/sql: component must be a lower-case name such as "rbac"',
      code: 'TRV_SQL_COMPONENT',
    })
    await t.rejects(runMigrations(client, 'notes', [v1, { ...v2, version: 1 }]), {
      message: '@trivium/sql: notes: migration version 1 is listed twice',
      code: 'TRV_SQL_MIGRATION_TWICE',
    })
    await t.rejects(runMigrations(client, 'notes', [{ ...v1, version: 0 }]), {
      message: '@trivium/sql: notes: every migration needs a positive integer version',
      code: 'TRV_SQL_MIGRATION_VERSION',
    })
    await t.rejects(runMigrations(client, 'notes', [{ ...v1, sql: ' ' }]), {
      message: '@trivium/sql: notes: migration 1 needs sql',
      code: 'TRV_SQL_MIGRATION_SQL',
    })
    t.same(await appliedMigrations(client, 'notes'), [])
  })
}

t.test('postgres: concurrent runners on one schema apply each migration exactly once', async (t) => {
  const postgres = engines.find((e) => e.name === 'postgres')!
  const { client, extra } = await postgres.open(t)
  const others = await Promise.all([extra(), extra(), extra()])
  // A migration that would fail if run twice (plain CREATE TABLE, INSERT counted below).
  const migrations: Migration[] = [
    v1,
    v2,
    { version: 3, name: 'seed', sql: "INSERT INTO notes (body) VALUES ('seeded')" },
  ]
  const results = await Promise.allSettled(
    [client, ...others].map((c) => runMigrations(c, 'notes', migrations)),
  )
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'],
  )
  t.same(await appliedMigrations(client, 'notes'), [1, 2, 3])
  t.same((await client.query('SELECT count(*)::int AS n FROM notes')).rows, [{ n: 1 }], 'seed ran once')
  t.same((await client.query('SELECT count(*)::int AS n FROM trivium_migrations')).rows, [{ n: 3 }])
})
