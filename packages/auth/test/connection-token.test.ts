// A frame connection's last verified token (auth middleware): the next call of the same connection with
// the same token skips the verified-token cache, and nothing else changes — expiry, revocation, a new
// token on the connection, other connections, `verifiedCacheSize: 0`.
import type { TokenService } from '@trivium/auth'
import type { TriviumCall } from '@trivium/core'
import t from 'tap'
import { alice, authApp, decodePayload, invokeMe, manualClock } from './helpers.js'

const bob = { id: 8, username: 'bob', email: 'bob@example.com', roles: ['member'], permissions: [] }

async function build(options: { verifiedCacheSize?: number } = {}) {
  const clock = manualClock(Date.now())
  const app = await authApp({ clock, ...options })
  app.trivium.endpoint('me', { method: 'GET', url: '/me' }, (_req: unknown, call: TriviumCall) => ({
    user_id: call.context.user_id,
    username: call.context.username,
    expiresAt: call.identity?.expiresAt,
  }))
  await app.ready()
  t.teardown(() => app.close())
  // Counts full validations (`validate` is what the cache and the memo stand in front of).
  const tokens = (app.triviumAuth as unknown as { tokens: TokenService }).tokens
  const validate = tokens.validate.bind(tokens)
  let validations = 0
  tokens.validate = (token: unknown) => {
    validations++
    return validate(token)
  }
  const call = (connection: Record<string, unknown> | undefined, token: string) =>
    invokeMe(app, 'tcp', { metadata: { auth_token: token }, connection })
  return { app, clock, call, validations: () => validations }
}

t.test('the same token on one connection is validated once', async (t) => {
  const { app, call, validations } = await build()
  const token = await app.triviumAuth.issueAccessToken(alice)
  const connection = {}
  for (let i = 0; i < 3; i++) {
    const out = await call(connection, token)
    t.same(out.result, {
      user_id: 7,
      username: 'alice',
      expiresAt: out.call.identity?.expiresAt,
    })
  }
  t.equal(validations(), 1, 'one validation for three calls')
  // The same token text in another string (another frame's metadata): still the connection's token.
  await call(connection, `${token.slice(0, 10)}${token.slice(10)}`)
  t.equal(validations(), 1)
  // Another connection validates it for itself.
  await call({}, token)
  t.equal(validations(), 2)
  // No connection (HTTP, invoke without one): every call validates, as before.
  await invokeMe(app, 'tcp', { metadata: { auth_token: token } })
  await invokeMe(app, 'tcp', { metadata: { auth_token: token } })
  t.equal(validations(), 4)
})

t.test('another token on the connection is validated and replaces the last one', async (t) => {
  const { app, call, validations } = await build()
  const aliceToken = await app.triviumAuth.issueAccessToken(alice)
  const bobToken = await app.triviumAuth.issueAccessToken(bob)
  const connection = {}
  t.equal(((await call(connection, aliceToken)).result as { username: string }).username, 'alice')
  t.equal(((await call(connection, bobToken)).result as { username: string }).username, 'bob')
  t.equal(((await call(connection, aliceToken)).result as { username: string }).username, 'alice')
  t.equal(validations(), 3)
  // A forged token of the same length as the last one is validated, never taken for it.
  const forged = `${aliceToken.slice(0, -2)}${aliceToken.endsWith('AA') ? 'BB' : 'AA'}`
  await t.rejects(call(connection, forged), {
    statusCode: 401,
    message: 'Invalid token: The token signature is invalid.',
  })
  t.equal(validations(), 4)
  t.equal(((await call(connection, aliceToken)).result as { username: string }).username, 'alice')
})

t.test('expiry and revocation are checked on every call', async (t) => {
  const { app, clock, call } = await build()
  const token = await app.triviumAuth.issueAccessToken(alice, { ttlSeconds: 60 })
  const connection = {}
  await call(connection, token)
  const exp = decodePayload(token).exp as number
  clock.set(exp * 1000 - 1)
  t.equal(((await call(connection, token)).result as { user_id: number }).user_id, 7, 'valid 1 ms before exp')
  clock.set(exp * 1000)
  await t.rejects(
    call(connection, token),
    { statusCode: 401, message: 'Token has expired' },
    'expired at exp',
  )

  const other = await app.triviumAuth.issueAccessToken(alice)
  await call(connection, other)
  await app.triviumAuth.revokeToken(other)
  await t.rejects(call(connection, other), { statusCode: 401, message: 'Token has been revoked' })
})

t.test('verifiedCacheSize: 0 validates every call', async (t) => {
  const { app, call, validations } = await build({ verifiedCacheSize: 0 })
  const token = await app.triviumAuth.issueAccessToken(alice)
  const connection = {}
  await call(connection, token)
  await call(connection, token)
  t.equal(validations(), 2)
})
