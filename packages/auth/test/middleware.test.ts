import triviumAuth, { type TriviumAuthOptions, WEAK_SECRET } from '@trivium/auth'
import trivium, { type Protocol, type TriviumCall } from '@trivium/core'
import Fastify from 'fastify'
import t from 'tap'
import { accessPayload, alice, craft, ISSUER, invokeMe, manualClock, SECRET } from './helpers.js'

async function build(options: Partial<TriviumAuthOptions> = {}) {
  const clock = manualClock(Date.now())
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, clock, ...options })
  const whoami = (_req: unknown, call: TriviumCall) => {
    const { token_claims, ...rest } = call.context
    return { ...rest, hasClaims: token_claims !== undefined }
  }
  app.trivium.endpoint('me', { method: 'GET', url: '/me' }, whoami)
  app.trivium.endpoint('open', { method: 'GET', url: '/open' }, whoami)
  app.trivium.endpoint('maybe', { method: 'GET', url: '/maybe' }, whoami)
  app.trivium.endpoint('declared.public', { method: 'GET', url: '/dp', auth: 'public' }, whoami)
  app.trivium.endpoint('declared.optional', { method: 'GET', url: '/do', auth: 'optional' }, whoami)
  await app.ready()
  return { app, clock }
}

t.test('HTTP outcomes', async (t) => {
  const { app, clock } = await build({ publicEndpoints: ['open'], optionalEndpoints: ['maybe'] })
  t.teardown(() => app.close())
  const token = await app.triviumAuth.issueAccessToken(alice)
  const get = (url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url, headers })
  const bearer = (tok: string) => ({ authorization: `Bearer ${tok}` })

  let r = await get('/me')
  t.equal(r.statusCode, 401)
  t.same(r.json(), {
    statusCode: 401,
    code: 'TRV_UNAUTHORIZED',
    error: 'UnauthorizedException',
    message: 'Authentication required',
    requestId: r.json().requestId,
  })

  r = await get('/me', bearer(token))
  t.equal(r.statusCode, 200)
  t.same(r.json(), {
    user_id: 7,
    username: 'alice',
    email: 'alice@example.com',
    roles: ['admin'],
    permissions: ['users.read'],
    authenticated: true,
    hasClaims: true,
  })
  // query parameter
  t.equal((await get(`/me?token=${token}`)).statusCode, 200)
  // header wins over query on http
  r = await get('/me?token=garbage', bearer(token))
  t.equal(r.statusCode, 200)
  r = await get(`/me?token=${token}`, bearer('garbage'))
  t.equal(r.statusCode, 401)
  t.equal(r.json().message, 'Invalid token: The token is malformed.')
  // scheme is case-insensitive, other schemes are not a token
  t.equal((await get('/me', { authorization: `bearer ${token}` })).statusCode, 200)
  t.equal((await get('/me', { authorization: `Basic ${token}` })).json().message, 'Authentication required')
  t.equal((await get('/me', { authorization: 'Bearer ' })).json().message, 'Authentication required')
  t.equal((await get('/me', { authorization: 'Bearer' })).json().message, 'Authentication required')

  // invalid tokens of every kind
  const now = clock.seconds()
  const bad: [string, string][] = [
    ['garbage', 'Invalid token: The token is malformed.'],
    [
      craft({ alg: 'none' }, accessPayload(now), { signature: '' }),
      'Invalid token: The token signature is missing.',
    ],
    [
      craft({ alg: 'HS512' }, accessPayload(now), { hmac: 'sha512' }),
      'Invalid token: The token algorithm is invalid.',
    ],
    [
      craft({ alg: 'HS256' }, accessPayload(now), { secret: 'nope' }),
      'Invalid token: The token signature is invalid.',
    ],
    [
      craft({ alg: 'HS256' }, accessPayload(now, { iss: 'evil' })),
      'Invalid token: The iss claim value is not allowed.',
    ],
    [
      craft({ alg: 'HS256' }, accessPayload(now, { aud: 'evil' })),
      'Invalid token: The aud claim value is not allowed.',
    ],
    [
      craft({ alg: 'HS256' }, accessPayload(now, { token_type: undefined })),
      'Invalid token: Missing token type',
    ],
    [craft({ alg: 'HS256' }, accessPayload(now, { nbf: now + 60 })), 'Invalid token: Token not yet valid'],
    [
      craft({ alg: 'HS256' }, accessPayload(now, { email: undefined })),
      'Invalid token: Token validation failed: claim email is missing',
    ],
    [
      await app.triviumAuth.issueRefreshToken(7),
      'Invalid token: Token validation failed: claim username is missing',
    ],
  ]
  for (const [tok, message] of bad) {
    r = await get('/me', bearer(tok))
    t.equal(r.statusCode, 401, message)
    t.equal(r.json().error, 'UnauthorizedException')
    t.equal(r.json().message, message)
    t.notMatch(r.body, /at .*\.js|node_modules/, 'no stack trace')
  }

  // expired
  r = await get('/me', bearer(craft({ alg: 'HS256' }, accessPayload(now, { exp: now }))))
  t.equal(r.statusCode, 401)
  t.equal(r.json().error, 'TokenExpiredException')
  t.equal(r.json().code, 'TRV_TOKEN_EXPIRED')
  t.equal(r.json().message, 'Token has expired')

  // revoked
  const other = await app.triviumAuth.issueAccessToken(alice)
  t.equal((await get('/me', bearer(other))).statusCode, 200, 'cached as verified')
  await app.triviumAuth.revokeToken(other)
  r = await get('/me', bearer(other))
  t.equal(r.statusCode, 401)
  t.equal(r.json().message, 'Token has been revoked')
  // a revoked token stays refused on public? no: public endpoints do not look at tokens at all
  t.equal((await get('/open', bearer(other))).statusCode, 200)

  // public: no check at all, no context
  r = await get('/open', bearer('garbage'))
  t.equal(r.statusCode, 200)
  t.same(r.json(), { hasClaims: false })
  // optional: no token -> unauthenticated; a token -> checked
  t.same((await get('/maybe')).json(), { hasClaims: false })
  t.equal((await get('/maybe', bearer(token))).json().authenticated, true)
  r = await get('/maybe', bearer('garbage'))
  t.equal(r.statusCode, 401)
  t.equal(r.json().message, 'Invalid token: The token is malformed.')
  t.equal((await get('/maybe', bearer(other))).json().message, 'Token has been revoked')
  // declared per endpoint
  t.equal((await get('/dp')).statusCode, 200)
  t.same((await get('/do')).json(), { hasClaims: false })
  t.equal((await get('/do', bearer('x.y.z'))).statusCode, 401)

  // token expires while cached
  const short = await app.triviumAuth.issueAccessToken(alice, { ttlSeconds: 5 })
  t.equal((await get('/me', bearer(short))).statusCode, 200)
  clock.advance(5_000)
  r = await get('/me', bearer(short))
  t.equal(r.json().message, 'Token has expired')
})

t.test('websocket, tcp and other protocols (through trivium.invoke)', async (t) => {
  const { app } = await build()
  t.teardown(() => app.close())
  const token = await app.triviumAuth.issueAccessToken(alice)
  const invoke = (protocol: Protocol, extra: Record<string, unknown>) => invokeMe(app, protocol, extra)
  // websocket: query first, then header
  let out = await invoke('websocket', { query: { token } })
  t.equal((out.result as { user_id: number }).user_id, 7)
  out = await invoke('websocket', { headers: { authorization: `Bearer ${token}` } })
  t.equal((out.result as { user_id: number }).user_id, 7)
  await t.resolves(
    invoke('websocket', { query: { token }, headers: { authorization: 'Bearer garbage' } }),
    'query wins',
  )
  await t.rejects(
    invoke('websocket', { query: { token: 'garbage' }, headers: { authorization: `Bearer ${token}` } }),
    {
      message: 'Invalid token: The token is malformed.',
    },
  )
  await t.rejects(invoke('websocket', {}), { message: 'Authentication required', statusCode: 401 })
  // tcp: metadata auth_token only
  out = await invoke('tcp', { metadata: { auth_token: token } })
  t.equal((out.result as { user_id: number }).user_id, 7)
  await t.rejects(invoke('tcp', { headers: { authorization: `Bearer ${token}` }, query: { token } }), {
    message: 'Authentication required',
  })
  await t.rejects(invoke('tcp', { metadata: { auth_token: 'garbage' } }), {
    message: 'Invalid token: The token is malformed.',
  })
  // any other protocol: no token
  await t.rejects(invoke('grpc' as Protocol, { metadata: { auth_token: token }, query: { token } }), {
    message: 'Authentication required',
  })
})

t.test('store outage fails closed with 503', async (t) => {
  const failing = {
    add: async () => {},
    contains: async () => {
      const { ServiceUnavailableException } = await import('@trivium/core')
      throw new ServiceUnavailableException('Revocation list is unavailable')
    },
    remove: async () => {},
    cleanup: async () => 0,
  }
  const { app } = await build({ revocationStore: failing })
  t.teardown(() => app.close())
  const token = await app.triviumAuth.issueAccessToken(alice)
  const r = await app.inject({ method: 'GET', url: '/me', headers: { authorization: `Bearer ${token}` } })
  t.equal(r.statusCode, 503)
  t.equal(r.json().code, 'TRV_SERVICE_UNAVAILABLE')
  t.equal(r.json().message, 'Revocation list is unavailable')
})

t.test('plugin options', async (t) => {
  const make = async (opts: Record<string, unknown>) => {
    const app = Fastify()
    await app.register(trivium)
    await app.register(triviumAuth, opts as unknown as TriviumAuthOptions)
    await app.ready()
    await app.close()
  }
  await t.rejects(make({ issuer: ISSUER }), {
    code: 'TRV_AUTH_SECRET_REQUIRED',
    message: /@trivium\/auth: secret is required/,
  })
  await t.rejects(make({ secret: '', issuer: ISSUER }), {
    code: 'TRV_AUTH_SECRET_EMPTY',
    message: /@trivium\/auth: secret must not be empty/,
  })
  await t.rejects(make({ secret: SECRET }), {
    code: 'TRV_AUTH_ISSUER',
    message: /issuer must be a non-empty string/,
  })
  await t.rejects(make({ secret: SECRET, issuer: ISSUER, publicEndpoints: 'me' }), {
    code: 'TRV_AUTH_ENDPOINT_NAMES',
    message: /publicEndpoints must be a list/,
  })
  await t.rejects(make({ secret: SECRET, issuer: ISSUER, revocationStore: {} }), {
    code: 'TRV_AUTH_REVOCATION_STORE',
    message: /revocationStore must implement/,
  })
  await t.rejects(make({ secret: SECRET, issuer: ISSUER, accessTokenTtlSeconds: -5 }), {
    code: 'TRV_AUTH_TTL',
    message: /accessTokenTtlSeconds/,
  })
  const old = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  try {
    await t.rejects(make({ secret: 'x'.repeat(31), issuer: ISSUER }), {
      code: 'TRV_AUTH_WEAK_SECRET',
      message: WEAK_SECRET,
    })
    await t.rejects(make({ secret: 'x'.repeat(31), issuer: ISSUER, allowWeakSecretForTesting: true }), {
      message: WEAK_SECRET,
    })
    await t.resolves(make({ secret: 'x'.repeat(32), issuer: ISSUER }))
  } finally {
    process.env.NODE_ENV = old
  }
  // without core
  const bare = Fastify()
  await t.rejects(async () => {
    await bare.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
    await bare.ready()
  }, /@trivium\/core/)
  // bad per-endpoint declaration
  const app = Fastify()
  await app.register(trivium)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  app.trivium.endpoint('x', { method: 'GET', url: '/x', auth: 'nope' as never }, () => ({}))
  await t.rejects(async () => app.ready(), {
    code: 'TRV_AUTH_ENDPOINT_MODE',
    message: /endpoint "x": auth must be one of public, optional, required/,
  })
})

t.test('rolesProvider fills roles and de-duplicated permissions', async (t) => {
  const { app } = await build({
    rolesProvider: async (userId) => ({ roles: [`r${userId}`, 'viewer'], permissions: ['p1', 'p2', 'p1'] }),
  })
  t.teardown(() => app.close())
  const token = await app.triviumAuth.issueAccessToken({ id: 3, username: 'bob', email: 'bob@example.com' })
  const claims = app.triviumAuth.validate(token).claims!
  t.same(claims.roles, ['r3', 'viewer'])
  t.same(claims.permissions, ['p1', 'p2'])
})
