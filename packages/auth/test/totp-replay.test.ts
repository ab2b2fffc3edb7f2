// A TOTP code is good once (RFC 6238 §5.2): accepted once, it is refused if presented again in its
// window, per user, on every instance that shares the revocation store (memory: one instance; Redis:
// several).
import { randomBytes } from 'node:crypto'
import {
  DuplicateUserError,
  INVALID_TOTP,
  MemoryRevocationStore,
  type NewUser,
  RedisRevocationStore,
  type RevocationStore,
  type UserRecord,
  type UserStore,
} from '@trivium/auth'
import { shutdownPasswordWorkers, totp } from '@trivium/crypto'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { authApp, manualClock } from './helpers.js'

const ENCRYPTION_KEY = randomBytes(32).toString('base64')
const PASSWORD = 'Str0ng!Passw0rd'
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

t.teardown(() => shutdownPasswordWorkers())

/** Users shared by the instances of a test (what a database would be). */
function memoryUsers(): UserStore {
  const rows = new Map<number, UserRecord>()
  return {
    async create(user: NewUser) {
      for (const row of rows.values())
        if (row.username === user.username) throw new DuplicateUserError('username')
      const record = {
        ...user,
        id: rows.size + 1,
        totpSecret: null,
        totpEnabled: false,
        createdAt: new Date(),
      }
      rows.set(record.id, record)
      return record
    },
    async findByUsername(username) {
      return [...rows.values()].find((row) => row.username === username)
    },
    async findById(id) {
      return rows.get(id)
    },
    async setTotp(id, encryptedSecret, enabled) {
      const row = rows.get(id)
      if (row) rows.set(id, { ...row, totpSecret: encryptedSecret, totpEnabled: enabled })
    },
  }
}

async function instance(users: UserStore, revocationStore: RevocationStore, clock: () => number) {
  const app = await authApp({ clock, revocationStore, flows: { users, encryptionKey: ENCRYPTION_KEY } })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

function post(app: FastifyInstance, url: string, payload: object, token?: string) {
  return app.inject({
    method: 'POST',
    url,
    payload,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  })
}

/** Registers `name` on `app` with TOTP on; resolves to the secret. The clock then moves one step on. */
async function withTotp(app: FastifyInstance, name: string, clock: ReturnType<typeof manualClock>) {
  await post(app, '/auth/register', { username: name, email: `${name}@example.com`, password: PASSWORD })
  const token = (await post(app, '/auth/login', { username: name, password: PASSWORD })).json().accessToken
  const { secret } = (await post(app, '/auth/totp/enable', {}, token)).json()
  const confirm = await post(
    app,
    '/auth/totp/confirm',
    { code: totp.generate(secret, { at: clock() }) },
    token,
  )
  if (confirm.statusCode !== 200) throw new Error(confirm.body)
  clock.advance(30_000)
  return secret as string
}

/**
 * Logs `name` in on `first` with a fresh code, then presents the same code to `second`: refused.
 * Resolves to the secret and the code.
 */
async function replayRefused(
  t: Test,
  first: FastifyInstance,
  second: FastifyInstance,
  name: string,
  clock: ReturnType<typeof manualClock>,
) {
  const secret = await withTotp(first, name, clock)
  const code = totp.generate(secret, { at: clock() })
  const login = { username: name, password: PASSWORD, totpCode: code }
  const accepted = await post(first, '/auth/login', login)
  t.equal(accepted.statusCode, 200, 'the code is accepted once')
  const replay = await post(second, '/auth/login', login)
  t.equal(replay.statusCode, 401)
  t.equal(replay.json().message, INVALID_TOTP)
  return { secret, code, login, accessToken: accepted.json().accessToken as string }
}

t.test('memory store: a code is accepted once on an instance', async (t) => {
  const clock = manualClock(Date.now())
  const app = await instance(memoryUsers(), new MemoryRevocationStore({ clock }), clock)
  const { secret, login } = await replayRefused(t, app, app, 'carol', clock)
  // The code that confirmed the setup cannot log in either (same step, same user): moved on above.
  clock.advance(30_000)
  t.equal(
    (await post(app, '/auth/login', { ...login, totpCode: totp.generate(secret, { at: clock() }) }))
      .statusCode,
    200,
  )
  // Once every step the code could match has passed, the entry expires (a code repeats only by chance).
  clock.advance(120_000)
  t.equal(
    (await post(app, '/auth/login', { ...login, totpCode: totp.generate(secret, { at: clock() }) }))
      .statusCode,
    200,
  )
})

t.test('Redis store: a code used on one instance is refused on another', async (t) => {
  const clock = manualClock(Date.now())
  const client = new Redis(REDIS_URL)
  t.teardown(() => client.disconnect())
  const prefix = `test:totp:${randomBytes(6).toString('hex')}:`
  const users = memoryUsers()
  const a = await instance(users, new RedisRevocationStore({ client, prefix }), clock)
  const b = await instance(users, new RedisRevocationStore({ client, prefix }), clock)
  const { code, login, accessToken } = await replayRefused(t, a, b, 'dave', clock)
  t.ok(await client.exists(`${prefix}totp-used:1:${code}`), 'listed per user and code')
  // Disabling TOTP with the code already used for login is refused too, on the other instance.
  const disable = await post(b, '/auth/totp/disable', { code }, accessToken)
  t.equal(disable.statusCode, 400)
  t.equal(disable.json().message, INVALID_TOTP)
  t.equal((await post(a, '/auth/login', login)).statusCode, 401, 'and on the first instance')
  const keys = await client.keys(`${prefix}*`)
  t.teardown(async () => {
    if (keys.length > 0) await client.del(...keys)
  })
})
