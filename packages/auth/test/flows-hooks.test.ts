// The flows' hooks: `onRegistered` (the user row and the hook's writes commit together or not at all)
// and `onTheft` (called once a reused refresh token made the flows revoke every token of the user).
import { randomBytes } from 'node:crypto'
import triviumAuth, { type RegisteredHook, type UserStore } from '@trivium/auth'
import { SqlTokenLedger, SqlUserStore } from '@trivium/auth/sql'
import trivium from '@trivium/core'
import { shutdownPasswordWorkers } from '@trivium/crypto'
import { connectPostgres, type SqlClient } from '@trivium/sql'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { freshPglite, ISSUER, SECRET } from './helpers.js'

const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'
const ENCRYPTION_KEY = randomBytes(32).toString('base64')
const PASSWORD = 'Str0ng!Passw0rd'

t.teardown(() => shutdownPasswordWorkers())

async function postgres(t: Test): Promise<SqlClient> {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const client = await connectPostgres({ connectionString: PG_URL, schema, max: 3 })
  t.teardown(async () => {
    await client.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.close()
  })
  return client
}

async function build(t: Test, sql: SqlClient, flows: Record<string, unknown> = {}) {
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, {
    secret: SECRET,
    issuer: ISSUER,
    ledger: new SqlTokenLedger(sql),
    flows: { users: new SqlUserStore(sql), encryptionKey: ENCRYPTION_KEY, ...flows },
  })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

function post(app: FastifyInstance, url: string, payload: unknown) {
  return app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> })
}

const body = (username: string) => ({ username, email: `${username}@example.com`, password: PASSWORD })

/** A role table and an assignment table, like @trivium/rbac's: assigning an unknown role id fails (FK). */
async function roleTables(sql: SqlClient): Promise<number> {
  await sql.exec(`
    CREATE TABLE test_roles (id serial PRIMARY KEY, name text NOT NULL);
    CREATE TABLE test_user_roles (
      user_id bigint NOT NULL REFERENCES auth_users(id),
      role_id int NOT NULL REFERENCES test_roles(id)
    );`)
  const { rows } = await sql.query<{ id: number }>(
    "INSERT INTO test_roles (name) VALUES ('member') RETURNING id",
  )
  return rows[0]!.id
}

const assign =
  (roleId: () => number): RegisteredHook =>
  (user, tx) =>
    tx.query('INSERT INTO test_user_roles (user_id, role_id) VALUES ($1, $2)', [user.id, roleId()])

async function countUsers(sql: SqlClient, username: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM auth_users WHERE lower(username) = lower($1)',
    [username],
  )
  return rows[0]!.n
}

for (const engine of ['PGlite', 'PostgreSQL'] as const) {
  t.test(`onRegistered: user and role commit together or not at all (${engine})`, async (t) => {
    const sql = engine === 'PGlite' ? await freshPglite() : await postgres(t)
    let roleId = -1
    let calls = 0
    const app = await build(t, sql, {
      onRegistered: ((user, tx) => {
        calls++
        return assign(() => roleId)(user, tx)
      }) satisfies RegisteredHook,
    })
    const member = await roleTables(sql)

    // the role assignment fails (unknown role id): the user row is rolled back with it
    roleId = 987654
    const failed = await post(app, '/auth/register', body('erin'))
    t.equal(failed.statusCode, 500)
    t.equal(calls, 1)
    t.equal(await countUsers(sql, 'erin'), 0, 'no user left without a role')

    // the same username (and e-mail) registers afterwards
    roleId = member
    const ok = await post(app, '/auth/register', body('erin'))
    t.equal(ok.statusCode, 201)
    const user = ok.json()
    t.match(user, { id: Number, username: 'erin', email: 'erin@example.com' })
    const { rows } = await sql.query('SELECT user_id::int AS user_id, role_id FROM test_user_roles')
    t.same(rows, [{ user_id: user.id, role_id: member }], 'one assignment, of the committed user')

    // a duplicate fails before the hook runs, with the usual message
    const dup = await post(app, '/auth/register', { ...body('ERIN'), email: 'other@example.com' })
    t.equal(dup.statusCode, 400)
    t.equal(dup.json().message, 'Username is already taken')
    t.equal(calls, 2, 'the hook did not run for the duplicate')

    // per call (authFlows.register): runs after the flows' hook, in the same transaction
    const flows = app.authFlows
    if (flows === undefined) throw new Error('the flows option was given: authFlows is decorated')
    const order: string[] = []
    await t.rejects(
      flows.register(body('frank'), {
        onRegistered: async (user, tx) => {
          order.push('call')
          const { rows } = await tx.query('SELECT username FROM auth_users WHERE id = $1', [user.id])
          t.same(rows, [{ username: 'frank' }], 'the hook sees the uncommitted user through tx')
          throw new Error('no profile')
        },
      }),
      { message: 'no profile' },
    )
    t.equal(calls, 3)
    t.same(order, ['call'])
    t.equal(await countUsers(sql, 'frank'), 0)
    const frank = await flows.register(body('frank'))
    t.equal(frank.username, 'frank')
  })
}

t.test('onRegistered without a transactional store, and option types', async (t) => {
  const sql = await freshPglite()
  const make = async (flows: Record<string, unknown>) => {
    const app = Fastify()
    await app.register(trivium)
    await app.register(triviumAuth, {
      secret: SECRET,
      issuer: ISSUER,
      flows: { encryptionKey: ENCRYPTION_KEY, ...flows } as never,
    })
    await app.close()
  }
  const users: UserStore = {
    create: async () => {
      throw new Error('unused')
    },
    findByUsername: async () => undefined,
    findById: async () => undefined,
    setTotp: async () => {},
  }
  await t.rejects(make({ users, onRegistered: () => {} }), {
    code: 'TRV_AUTH_FLOWS_TRANSACTION',
    message: '@trivium/auth: flows.onRegistered needs a user store with transaction() (e.g. SqlUserStore)',
  })
  await t.rejects(make({ users: new SqlUserStore(sql), onRegistered: 'yes' }), {
    code: 'TRV_AUTH_FLOWS_ON_REGISTERED',
    message: '@trivium/auth: flows.onRegistered must be a function',
  })
  await t.rejects(make({ users: new SqlUserStore(sql), onTheft: 1 }), {
    code: 'TRV_AUTH_FLOWS_ON_THEFT',
    message: '@trivium/auth: flows.onTheft must be a function',
  })
  await t.resolves(make({ users }), 'no hook: any store')
})

t.test('onTheft: called with the user id once a refresh token is reused', async (t) => {
  const sql = await freshPglite()
  const thefts: number[] = []
  let fail = false
  const app = await build(t, sql, {
    onTheft: async (userId: number) => {
      thefts.push(userId)
      if (fail) throw new Error('announcement failed')
    },
  })
  const user = (await post(app, '/auth/register', body('gina'))).json()
  const login = async () =>
    (await post(app, '/auth/login', { username: 'gina', password: PASSWORD })).json() as {
      accessToken: string
      refreshToken: string
    }

  const pair = await login()
  const rotated = await post(app, '/auth/refresh', { refreshToken: pair.refreshToken })
  t.equal(rotated.statusCode, 200)
  t.same(thefts, [], 'a normal rotation is no theft')

  const reused = await post(app, '/auth/refresh', { refreshToken: pair.refreshToken })
  t.equal(reused.statusCode, 401)
  t.equal(reused.json().message, 'Token has been revoked')
  t.same(thefts, [user.id])
  const me = await app.inject({
    url: '/auth/me',
    headers: { authorization: `Bearer ${rotated.json().accessToken}` },
  })
  t.equal(me.json().message, 'Token has been revoked', 'revoked before the callback ran')

  // a failing callback does not change the answer
  fail = true
  const again = await login()
  await post(app, '/auth/refresh', { refreshToken: again.refreshToken })
  const stolen = await post(app, '/auth/refresh', { refreshToken: again.refreshToken })
  t.equal(stolen.statusCode, 401)
  t.equal(stolen.json().message, 'Token has been revoked')
  t.same(thefts, [user.id, user.id])
})
