// call.identity filled from call.credential on every transport; one rule for a repeated credential;
// the diagnostics channels; the onRevoked hook; the decorator living beside @fastify/auth.
import diagnostics from 'node:diagnostics_channel'
import fastifyAuth from '@fastify/auth'
import triviumAuth, {
  AUTH_FAILURE_CHANNEL,
  AUTH_REVOKED_CHANNEL,
  MemoryTokenLedger,
  type RevocationNotice,
  type TriviumAuthOptions,
} from '@trivium/auth'
import trivium, { type Protocol, type TriviumCall, websocketCredential } from '@trivium/core'
import { REPEATED_CREDENTIAL } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'
import { alice, authApp, ISSUER, invokeMe, manualClock, SECRET } from './helpers.js'

async function build(options: Partial<TriviumAuthOptions> = {}) {
  const clock = manualClock(Date.now())
  const app = await authApp({ clock, ...options })
  app.trivium.endpoint('me', { method: 'GET', url: '/me' }, (_req: unknown, call: TriviumCall) => ({
    identity: call.identity ?? null,
    userId: call.context.user_id,
    authenticated: call.context.authenticated,
  }))
  await app.ready()
  t.teardown(() => app.close())
  return { app, clock }
}

t.test('call.identity is filled from the credential, and the context keys stay', async (t) => {
  const { app, clock } = await build()
  const token = await app.triviumAuth.issueAccessToken(alice)
  const claims = app.triviumAuth.validate(token).claims!
  const expected = {
    userId: 7,
    username: 'alice',
    roles: ['admin'],
    permissions: ['users.read'],
    tokenId: claims.jti,
    expiresAt: Math.floor(clock() / 1000) * 1000 + 3600_000,
  }
  const r = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } })
  t.equal(r.statusCode, 200)
  t.same(r.json(), { identity: expected, userId: 7, authenticated: true })
  const invoke = (protocol: Protocol, extra: Record<string, unknown>) => invokeMe(app, protocol, extra)
  for (const [protocol, extra] of [
    ['websocket', { query: { token } }],
    ['tcp', { metadata: { auth_token: token } }],
    ['tcp', { credential: token }],
    ['websocket', { credential: () => token }],
  ] as const) {
    const out = await invoke(protocol, extra)
    t.same((out.result as { identity: unknown }).identity, expected, `${protocol} ${Object.keys(extra)}`)
  }
})

t.test('a repeated credential is refused with one message on every transport', async (t) => {
  const { app } = await build()
  const token = await app.triviumAuth.issueAccessToken(alice)
  for (const headers of [{}, { authorization: `Bearer ${token}` }]) {
    const r = await app.inject({ url: `/me?token=${token}&token=${token}`, headers })
    t.equal(r.statusCode, 401)
    const body = r.json()
    t.same(body, {
      statusCode: 401,
      code: body.code,
      error: 'UnauthorizedException',
      message: REPEATED_CREDENTIAL,
      requestId: r.headers['x-request-id'] ?? body.requestId,
    })
    t.equal(REPEATED_CREDENTIAL, 'Invalid token: the token is given more than once')
  }
  await t.rejects(invokeMe(app, 'websocket', { query: { token: [token, 'other'] } }), {
    message: REPEATED_CREDENTIAL,
    statusCode: 401,
  })
  // The WebSocket upgrade (identify) uses the same helper: no library message reaches the client.
  t.throws(() => websocketCredential({}, { token: ['a', 'b'] }), { message: REPEATED_CREDENTIAL })
  t.equal(websocketCredential({ authorization: 'Bearer h' }, { token: 'q' }), 'q', 'query first')
})

t.test('diagnostics channels: auth failures by reason, revocations by count', async (t) => {
  const ledger = new MemoryTokenLedger()
  const { app, clock } = await build({ ledger })
  const failures: unknown[] = []
  const revoked: unknown[] = []
  const onFailure = (message: unknown) => failures.push(message)
  const onRevoked = (message: unknown) => revoked.push(message)
  diagnostics.subscribe(AUTH_FAILURE_CHANNEL, onFailure)
  diagnostics.subscribe(AUTH_REVOKED_CHANNEL, onRevoked)
  t.teardown(() => {
    diagnostics.unsubscribe(AUTH_FAILURE_CHANNEL, onFailure)
    diagnostics.unsubscribe(AUTH_REVOKED_CHANNEL, onRevoked)
  })
  t.equal(AUTH_FAILURE_CHANNEL, 'trivium:auth:failure')
  t.equal(AUTH_REVOKED_CHANNEL, 'trivium:auth:revoked')
  const get = (token?: string) =>
    app.inject({ url: '/me', headers: token ? { authorization: `Bearer ${token}` } : {} })
  await get()
  await get('not.a.token')
  const short = await app.triviumAuth.issueAccessToken(alice, { ttlSeconds: 5 })
  clock.advance(10_000)
  await get(short)
  const token = await app.triviumAuth.issueAccessToken(alice)
  await app.triviumAuth.revokeToken(token)
  await get(token)
  t.same(failures, [
    { reason: 'missing' },
    { reason: 'invalid' },
    { reason: 'expired' },
    { reason: 'revoked' },
  ])
  await app.triviumAuth.issueTokenPair(alice)
  // Still in the ledger: the revoked token and the new pair.
  t.equal(await app.triviumAuth.revokeAllForUser(7), 3)
  t.same(revoked, [{ count: 1 }, { count: 3 }])
})

t.test(
  'onRevoked: the option and the decorator hear every revocation; a failing listener changes nothing',
  async (t) => {
    const fromOption: RevocationNotice[] = []
    const { app } = await build({
      ledger: new MemoryTokenLedger(),
      onRevoked: (notice) => {
        fromOption.push(notice)
      },
    })
    const fromMethod: RevocationNotice[] = []
    app.triviumAuth.onRevoked(async (notice) => {
      fromMethod.push(notice)
      throw new Error('listener down')
    })
    const token = await app.triviumAuth.issueAccessToken(alice)
    const jti = app.triviumAuth.validate(token).claims!.jti
    await app.triviumAuth.revokeToken(token)
    t.equal((await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } })).statusCode, 401)
    await app.triviumAuth.issueTokenPair(alice)
    await app.triviumAuth.revokeAllForUser(7)
    const expected = [
      { tokenId: jti, count: 1 },
      { userId: 7, count: 3 },
    ]
    t.same(fromOption, expected)
    t.same(fromMethod, expected)
    t.throws(() => app.triviumAuth.onRevoked(1 as never), {
      code: 'TRV_AUTH_ON_REVOKED',
      message: '@trivium/auth: onRevoked needs a function',
    })
  },
)

t.test('beside @fastify/auth: no decorator clash; ours is fastify.triviumAuth', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(fastifyAuth)
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.ready()
  t.equal(typeof app.auth, 'function', "@fastify/auth's decorator is intact")
  t.equal(typeof app.triviumAuth.issueAccessToken, 'function')
})

t.test('endpoint names in options are checked at ready(), naming the closest endpoint', async (t) => {
  for (const [option, message] of [
    [
      'publicEndpoints',
      '@trivium/auth: publicEndpoints names unknown endpoint "helth" (did you mean "health"?)',
    ],
    [
      'optionalEndpoints',
      '@trivium/auth: optionalEndpoints names unknown endpoint "helth" (did you mean "health"?)',
    ],
  ] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, [option]: ['helth'] })
    app.trivium.endpoint('health', { method: 'GET', url: '/health' }, () => ({}))
    app.trivium.endpoint('tasks.list', { method: 'GET', url: '/tasks' }, () => ({}))
    await t.rejects(
      async () => {
        await app.ready()
      },
      { message },
    )
  }
})

t.test('signing secrets under 32 bytes are refused unless a test opts in', async (t) => {
  const make = async (options: Partial<TriviumAuthOptions>) => {
    const app = Fastify()
    await app.register(trivium)
    await app.register(triviumAuth, { secret: 'abcde', issuer: ISSUER, ...options })
    await app.ready()
    await app.close()
  }
  await t.rejects(make({}), {
    code: 'TRV_AUTH_WEAK_SECRET',
    message:
      '@trivium/auth: the signing secret must be at least 32 bytes (use 32 random bytes; allowWeakSecretForTesting: true accepts a short one in tests)',
  })
  await t.rejects(make({ secret: Buffer.alloc(31, 1) }), /at least 32 bytes/)
  await t.rejects(make({ allowWeakSecretForTesting: 'yes' as never }), {
    message: '@trivium/auth: allowWeakSecretForTesting must be a boolean',
  })
  await t.resolves(make({ allowWeakSecretForTesting: true }))
  await t.resolves(make({ secret: Buffer.alloc(32, 1) }))
})
