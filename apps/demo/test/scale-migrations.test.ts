// Issue 11: instances starting at the same moment on an empty database (the schema does not even exist)
// all come up, and the schema is created once (advisory lock around the migrations).
import pg from 'pg'
import t from 'tap'
import {
  ADMIN,
  api,
  type Instance,
  login,
  newBackend,
  POSTGRES_URL,
  startInstances,
} from './scale-helpers.js'

const ROUNDS = 2
const INSTANCES = 3

for (let round = 1; round <= ROUNDS; round++)
  t.test(`round ${round}: ${INSTANCES} instances start at once on an empty schema`, async (t) => {
    const backend = newBackend()
    const db = new pg.Client({ connectionString: POSTGRES_URL })
    await db.connect()
    t.teardown(() => db.end())
    const exists = await db.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [backend.schema])
    t.equal(exists.rowCount, 0, 'the schema does not exist yet')

    const started = performance.now()
    const instances = (await startInstances(t, backend, INSTANCES)) as Instance[]
    t.comment(`${INSTANCES} instances up in ${(performance.now() - started).toFixed(0)} ms`)
    for (const i of instances) {
      const health = await api(i.base, 'GET', '/health')
      t.equal(health.status, 200)
      t.equal(health.body.version, `0.1.0 (${i.name})`, `${i.name} answers`)
      t.notMatch(i.output(), /"level":(50|60)/, `${i.name} logged no error`)
    }

    const s = `"${backend.schema}"`
    const migrations = await db.query(
      `SELECT component, version, count(*)::int AS n FROM ${s}.trivium_migrations GROUP BY 1, 2 ORDER BY 1, 2`,
    )
    t.ok(migrations.rowCount! >= 3, `${migrations.rowCount} component versions recorded`)
    t.same(
      migrations.rows.filter((r) => r.n !== 1),
      [],
      'one row per component and version',
    )
    const components = new Set(migrations.rows.map((r) => r.component))
    for (const c of ['auth', 'rbac', 'demo']) t.ok(components.has(c), `${c} migrated`)
    // The data seeded at start-up exists once too.
    const roles = await db.query(`SELECT name, count(*)::int AS n FROM ${s}.roles GROUP BY 1 ORDER BY 1`)
    t.same(roles.rows, [
      { name: 'admin', n: 1 },
      { name: 'member', n: 1 },
    ])
    const permissions = await db.query(`SELECT count(*)::int AS n FROM ${s}.permissions`)
    t.equal(permissions.rows[0].n, 4)
    const users = await db.query(`SELECT username FROM ${s}.auth_users`)
    t.same(
      users.rows.map((r) => r.username),
      ['admin'],
      'one admin user',
    )
    // The admin created by one instance logs in on every instance.
    for (const i of instances) t.ok((await login(i.base, ADMIN.username, ADMIN.password)).accessToken)
  })
