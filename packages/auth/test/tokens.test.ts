import { generateKeyPairSync } from 'node:crypto'
import { AUDIENCE, TokenClaims, TokenService } from '@trivium/auth'
import { cacheKey, checkSecret, generateJti, sameToken } from '@trivium/auth/internal'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import { accessPayload, craft, decodeHeader, decodePayload, ISSUER, manualClock, SECRET } from './helpers.js'

function service(clock = manualClock(), extra: Record<string, unknown> = {}) {
  return new TokenService({ secret: SECRET, issuer: ISSUER, clock, verifiedCacheSize: 0, ...extra })
}

const alice = {
  userId: 7,
  username: 'alice',
  email: 'alice@example.com',
  roles: ['admin', 'user'],
  permissions: ['a', 'b', 'a'],
}

t.test('access token has exactly the spec claims', async (t) => {
  const clock = manualClock(1_700_000_000_123)
  const tokens = service(clock)
  const token = tokens.issueAccessToken(alice)
  t.same(decodeHeader(token), { alg: 'HS256', typ: 'JWT' })
  const p = decodePayload(token)
  t.same(Object.keys(p).sort(), [
    'aud',
    'email',
    'exp',
    'iat',
    'iss',
    'jti',
    'nbf',
    'permissions',
    'roles',
    'sub',
    'token_type',
    'user_id',
    'username',
  ])
  t.equal(p.iss, ISSUER)
  t.equal(p.sub, '7')
  t.equal(p.aud, AUDIENCE)
  t.equal(p.aud, 'platform-api')
  t.equal(p.iat, 1_700_000_000)
  t.equal(p.nbf, p.iat)
  t.equal(p.exp, 1_700_000_000 + 3600, 'default lifetime 1 hour')
  t.match(p.jti, /^1700000000123_[a-zA-Z0-9]{8}$/)
  t.equal(p.user_id, 7)
  t.equal(p.username, 'alice')
  t.equal(p.email, 'alice@example.com')
  t.same(p.roles, ['admin', 'user'])
  t.same(p.permissions, ['a', 'b'], 'permissions de-duplicated')
  t.equal(p.token_type, 'access')
})

t.test('custom access lifetime', async (t) => {
  const clock = manualClock()
  const tokens = service(clock)
  const p = decodePayload(tokens.issueAccessToken(alice, { ttlSeconds: 60 }))
  t.equal((p.exp as number) - (p.iat as number), 60)
  const q = decodePayload(service(clock, { accessTokenTtlSeconds: 120 }).issueAccessToken(alice))
  t.equal((q.exp as number) - (q.iat as number), 120)
  t.throws(() => tokens.issueAccessToken(alice, { ttlSeconds: 0 }), /ttlSeconds must be a positive integer/)
  t.throws(() => tokens.issueAccessToken(alice, { ttlSeconds: 1.5 }), /ttlSeconds/)
})

t.test('refresh token: smaller claim set, 7 days', async (t) => {
  const clock = manualClock(1_700_000_000_999)
  const tokens = service(clock)
  const p = decodePayload(tokens.issueRefreshToken(7))
  t.same(Object.keys(p).sort(), ['aud', 'exp', 'iat', 'iss', 'jti', 'sub', 'token_type', 'user_id'])
  t.equal(p.token_type, 'refresh')
  t.equal(p.exp, 1_700_000_000 + 7 * 24 * 3600)
  t.equal(p.sub, '7')
  t.match(p.jti, /^1700000000999_[a-zA-Z0-9]{8}$/)
  const r = tokens.validateRefresh(tokens.issueRefreshToken(7))
  t.equal(r.isValid, true)
  t.equal(r.claims?.userId, 7)
})

t.test('jti format and uniqueness', async (t) => {
  const seen = new Set<string>()
  for (let i = 0; i < 500; i++) {
    const jti = generateJti(1234)
    t.match(jti, /^1234_[a-zA-Z0-9]{8}$/)
    seen.add(jti)
  }
  t.equal(seen.size, 500)
})

t.test('valid token parses into TokenClaims with helpers', async (t) => {
  const clock = manualClock(1_700_000_000_000)
  const tokens = service(clock)
  const r = tokens.validate(tokens.issueAccessToken(alice))
  t.equal(r.isValid, true)
  t.equal(r.isExpired, false)
  t.equal(r.error, undefined)
  const c = r.claims!
  t.ok(c instanceof TokenClaims)
  t.equal(c.userId, 7)
  t.equal(c.username, 'alice')
  t.equal(c.email, 'alice@example.com')
  t.same(c.roles, ['admin', 'user'])
  t.same(c.permissions, ['a', 'b'])
  t.equal(c.tokenType, 'access')
  t.same(c.issuedAt, new Date(1_700_000_000_000))
  t.same(c.expiresAt, new Date(1_700_003_600_000))
  t.match(c.jti, /^\d+_[a-zA-Z0-9]{8}$/)
  t.equal(c.hasPermission('a'), true)
  t.equal(c.hasPermission('c'), false)
  t.equal(c.hasRole('admin'), true)
  t.equal(c.hasRole('root'), false)
  t.equal(c.hasAnyRole(['root', 'user']), true)
  t.equal(c.hasAnyRole(['root']), false)
  t.equal(c.hasAnyRole([]), false)
  t.equal(c.hasAllRoles(['admin', 'user']), true)
  t.equal(c.hasAllRoles(['admin', 'root']), false)
  t.equal(c.hasAllRoles([]), true)
})

t.test('algorithm pinning', async (t) => {
  const clock = manualClock()
  const tokens = service(clock)
  const payload = accessPayload(clock.seconds())
  for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
    const empty = tokens.validate(craft({ alg, typ: 'JWT' }, payload, { signature: '' }))
    t.equal(empty.isValid, false, `alg ${alg}, empty signature`)
    t.equal(empty.isExpired, false)
    t.equal(empty.error, 'The token signature is missing.')
    const junk = tokens.validate(craft({ alg, typ: 'JWT' }, payload, { signature: 'abc' }))
    t.equal(junk.isValid, false, `alg ${alg}, junk signature`)
    t.ok(junk.error)
    const real = tokens.validate(craft({ alg, typ: 'JWT' }, payload))
    t.equal(real.isValid, false, `alg ${alg}, HMAC signature`)
  }
  const hs512 = tokens.validate(craft({ alg: 'HS512', typ: 'JWT' }, payload, { hmac: 'sha512' }))
  t.same(hs512, { isValid: false, isExpired: false, error: 'The token algorithm is invalid.' })
  const hs384 = tokens.validate(craft({ alg: 'HS384', typ: 'JWT' }, payload, { hmac: 'sha384' }))
  t.equal(hs384.isValid, false)
  // HS256 header but HS512 signature
  t.equal(tokens.validate(craft({ alg: 'HS256', typ: 'JWT' }, payload, { hmac: 'sha512' })).isValid, false)
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const rs256 = createSigner({
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    algorithm: 'RS256',
    noTimestamp: true,
  })(payload)
  const r = tokens.validate(rs256)
  t.equal(r.isValid, false, 'RS256 refused')
  t.equal(r.error, 'The token algorithm is invalid.')
  // Key confusion: HS256 signed with the RSA public key as the HMAC secret.
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString()
  t.equal(tokens.validate(craft({ alg: 'HS256', typ: 'JWT' }, payload, { secret: pem })).isValid, false)
  // Wrong secret
  t.same(tokens.validate(craft({ alg: 'HS256', typ: 'JWT' }, payload, { secret: 'other-secret' })), {
    isValid: false,
    isExpired: false,
    error: 'The token signature is invalid.',
  })
})

t.test('issuer and audience are enforced and required', async (t) => {
  const clock = manualClock()
  const tokens = service(clock)
  const now = clock.seconds()
  const cases: [Record<string, unknown>, string][] = [
    [{ iss: 'evil' }, 'The iss claim value is not allowed.'],
    [{ aud: 'other-api' }, 'The aud claim value is not allowed.'],
    [{ aud: ['other-api'] }, 'None of aud claim values are allowed.'],
    [{ iss: undefined }, 'The iss claim is required.'],
    [{ aud: undefined }, 'The aud claim is required.'],
    [{ sub: undefined }, 'The sub claim is required.'],
    [{ exp: undefined }, 'The exp claim is required.'],
    [{ iat: undefined }, 'The iat claim is required.'],
    [{ jti: undefined }, 'The jti claim is required.'],
  ]
  for (const [overrides, error] of cases) {
    const r = tokens.validate(craft({ alg: 'HS256', typ: 'JWT' }, accessPayload(now, overrides)))
    t.same(r, { isValid: false, isExpired: false, error }, JSON.stringify(overrides))
  }
  const other = new TokenService({ secret: SECRET, issuer: 'someone-else', clock })
  t.equal(tokens.validate(other.issueAccessToken(alice)).error, 'The iss claim value is not allowed.')
  t.equal(
    tokens.validate(craft({ alg: 'HS256' }, accessPayload(now, { aud: ['x', 'platform-api'] }))).isValid,
    true,
  )
})

t.test('validation order and messages', async (t) => {
  const clock = manualClock(1_700_000_000_000)
  const tokens = service(clock)
  const now = clock.seconds()
  const sign = (o: Record<string, unknown>) => craft({ alg: 'HS256', typ: 'JWT' }, accessPayload(now, o))

  t.same(tokens.validate(sign({ token_type: undefined })), {
    isValid: false,
    isExpired: false,
    error: 'Missing token type',
  })
  t.same(tokens.validate(sign({ token_type: null })), {
    isValid: false,
    isExpired: false,
    error: 'Missing token type',
  })
  // expired (exp in the past) wins over everything after the signature step
  t.same(tokens.validate(sign({ exp: now - 10 })), {
    isValid: false,
    isExpired: true,
    error: 'Token has expired',
  })
  t.same(
    tokens.validate(sign({ exp: now - 10, token_type: undefined })),
    {
      isValid: false,
      isExpired: true,
      error: 'Token has expired',
    },
    'library-detected expiry comes before the token type',
  )
  // boundary: now == exp is expired (the library alone would accept it)
  t.same(tokens.validate(sign({ exp: now })), { isValid: false, isExpired: true, error: 'Token has expired' })
  t.equal(tokens.validate(sign({ exp: now + 1 })).isValid, true)
  // at exactly exp*1000 ms: missing token_type is reported first (the library has not seen expiry yet)
  t.same(tokens.validate(sign({ exp: now, token_type: undefined })), {
    isValid: false,
    isExpired: false,
    error: 'Missing token type',
  })
  // not yet valid
  t.same(tokens.validate(sign({ nbf: now + 5 })), {
    isValid: false,
    isExpired: false,
    error: 'Token not yet valid',
  })
  t.equal(tokens.validate(sign({ nbf: now })).isValid, true, 'nbf == now is valid')
  // expired and not yet valid: expiry first (the spec's order; fast-jwt alone reports nbf first)
  t.same(tokens.validate(sign({ nbf: now + 5, exp: now - 5 })), {
    isValid: false,
    isExpired: true,
    error: 'Token has expired',
  })
  t.same(tokens.validate(sign({ nbf: 'soon' })), {
    isValid: false,
    isExpired: false,
    error: 'The nbf claim must be a number.',
  })
  t.same(tokens.validate(sign({ exp: 'later' })), {
    isValid: false,
    isExpired: false,
    error: 'The exp claim must be a number.',
  })
  // parse failures
  const parse: [Record<string, unknown>, string][] = [
    [{ username: undefined }, 'claim username is missing'],
    [{ email: undefined }, 'claim email is missing'],
    [{ roles: undefined }, 'claim roles is missing'],
    [{ permissions: undefined }, 'claim permissions is missing'],
    [{ user_id: undefined }, 'claim user_id is missing'],
    [{ username: 5 }, 'claim username must be a string'],
    [{ roles: 'admin' }, 'claim roles must be a list of strings'],
    [{ permissions: [1] }, 'claim permissions must be a list of strings'],
    [{ user_id: '7' }, 'claim user_id must be an integer'],
    [{ user_id: 1.5 }, 'claim user_id must be an integer'],
    [{ user_id: 8 }, 'claim sub does not match user_id'],
    [{ jti: 5 }, 'claim jti must be a string'],
    [{ iat: -1 }, 'claim iat must be an integer number of seconds'],
    [{ token_type: 1 }, 'claim token_type must be a string'],
  ]
  for (const [o, reason] of parse) {
    t.same(
      tokens.validate(sign(o)),
      { isValid: false, isExpired: false, error: `Token validation failed: ${reason}` },
      reason,
    )
  }
})

t.test('expiry through the clock', async (t) => {
  const clock = manualClock(1_700_000_000_000)
  for (const cacheSize of [0, 100]) {
    clock.set(1_700_000_000_000)
    const tokens = service(clock, { verifiedCacheSize: cacheSize })
    const token = tokens.issueAccessToken(alice, { ttlSeconds: 10 })
    t.equal(tokens.validate(token).isValid, true)
    clock.advance(9_999)
    t.equal(tokens.validate(token).isValid, true, `cache ${cacheSize}: 1 ms before exp`)
    clock.advance(1)
    t.same(
      tokens.validate(token),
      { isValid: false, isExpired: true, error: 'Token has expired' },
      `cache ${cacheSize}: at exp`,
    )
    clock.advance(60_000)
    t.same(tokens.validate(token), { isValid: false, isExpired: true, error: 'Token has expired' })
  }
})

t.test('refresh token used as an access token is invalid', async (t) => {
  const tokens = service()
  const r = tokens.validate(tokens.issueRefreshToken(7))
  t.same(r, { isValid: false, isExpired: false, error: 'Token validation failed: claim username is missing' })
  const a = tokens.validateRefresh(tokens.issueAccessToken(alice))
  t.same(a, { isValid: false, isExpired: false, error: 'Token validation failed: not a refresh token' })
})

t.test('garbage never throws', async (t) => {
  const tokens = service()
  const now = manualClock().seconds()
  const inputs: unknown[] = [
    undefined,
    null,
    42,
    {},
    [],
    '',
    'abc',
    'abc.def',
    'a.b.c',
    '...',
    'Bearer x',
    '\u0000.\u0000.\u0000',
    'x'.repeat(100_000),
    `${'a'.repeat(9000)}.b.c`,
    craft({ alg: 'HS256' }, 'a string payload'),
    craft({ alg: 'HS256' }, [1, 2]),
    craft({ alg: 'HS256' }, 42),
    craft({ alg: 'HS256' }, null),
    `${Buffer.from('not json').toString('base64url')}.${Buffer.from('{}').toString('base64url')}.sig`,
    craft({ alg: 'HS256', crit: ['exp'] }, accessPayload(now)),
  ]
  for (const input of inputs) {
    const r = tokens.validate(input)
    t.equal(r.isValid, false, String(input).slice(0, 40))
    t.equal(typeof r.error, 'string')
    t.notMatch(r.error!, /at .*\.js/, 'no stack in the message')
    t.equal(tokens.validateRefresh(input).isValid, false)
  }
  t.equal(tokens.validate(`${'a'.repeat(9000)}`).error, 'The token is malformed.')
})

t.test('secrets', async (t) => {
  t.throws(() => new TokenService({ secret: '', issuer: ISSUER }), {
    code: 'TRV_AUTH_SECRET_EMPTY',
    message: /secret must not be empty/,
  })
  t.throws(() => new TokenService({ secret: undefined as never, issuer: ISSUER }), {
    code: 'TRV_AUTH_SECRET_REQUIRED',
    message: /secret is required/,
  })
  t.throws(
    () => new TokenService({ secret: 'short', issuer: ISSUER, production: true }),
    /at least 32 bytes in production/,
  )
  t.ok(new TokenService({ secret: 'short', issuer: ISSUER, production: false }))
  t.ok(new TokenService({ secret: 'x'.repeat(32), issuer: ISSUER, production: true }))
  t.throws(() => new TokenService({ secret: SECRET, issuer: '' }), {
    code: 'TRV_AUTH_ISSUER',
    message: /issuer must be a non-empty string/,
  })
  t.throws(() => checkSecret(Buffer.alloc(0), false), /must not be empty/)
  const old = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  try {
    t.throws(() => new TokenService({ secret: 'a'.repeat(31), issuer: ISSUER }), /at least 32 bytes/)
  } finally {
    process.env.NODE_ENV = old
  }
})

t.test('verified-token cache is bounded and keyed by the whole token', async (t) => {
  const clock = manualClock()
  const tokens = service(clock, { verifiedCacheSize: 2 })
  const a = tokens.issueAccessToken(alice)
  const b = tokens.issueAccessToken({ ...alice, username: 'bob' })
  const c = tokens.issueAccessToken({ ...alice, username: 'carol' })
  t.equal(tokens.validate(a).claims?.username, 'alice')
  t.equal(tokens.validate(b).claims?.username, 'bob')
  t.equal(tokens.validate(c).claims?.username, 'carol')
  t.equal(tokens.validate(a).claims?.username, 'alice')
  // a token differing in its last signature character is not a cache hit
  const tampered = a.slice(0, -2) + (a.endsWith('AA') ? 'BB' : 'AA')
  t.equal(tokens.validate(tampered).isValid, false)
  // The cache is indexed by the token's end but compares the whole token: another payload with a's
  // signature (same last characters) is never served a's cached result.
  const [header, , signature] = a.split('.')
  const [, otherPayload] = b.split('.')
  const spliced = `${header}.${otherPayload}.${signature}`
  t.equal(tokens.validate(a).isValid, true, 'a is cached')
  const result = tokens.validate(spliced)
  t.equal(result.isValid, false, 'same signature, other payload: not a cache hit')
  t.equal(result.error, 'The token signature is invalid.')
  t.equal(tokens.validate(a).claims?.username, 'alice', 'a is still served from the cache')
})

t.test('verified-token cache key: a fold of the last five characters; a shared key is a miss', async (t) => {
  t.equal(cacheKey('abcd'), undefined, 'too short to be a token: not cached')
  const fold = (s: string) => [...s].reduce((k, c) => (k * 61 + c.charCodeAt(0)) & 0x3fffffff, 0)
  t.equal(cacheKey('xx.ABCDE'), fold('ABCDE'))
  t.equal(cacheKey('ABCDE'), 915_213_935)
  t.equal(cacheKey('...X-'), cacheKey('...Wj'), 'two ends with one key')
  const clock = manualClock()
  const tokens = service(clock, { verifiedCacheSize: 10 })
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  // A token of alice's and another string with the same key (its last two characters changed).
  let a = ''
  let twin: string | undefined
  for (let i = 0; twin === undefined && i < 200; i++) {
    a = tokens.issueAccessToken(alice)
    for (const x of alphabet) {
      for (const y of alphabet) {
        const other = a.slice(0, -2) + x + y
        if (other !== a && cacheKey(other) === cacheKey(a)) twin = other
      }
    }
  }
  if (twin === undefined) throw new Error('no token with a twin key found')
  t.equal(tokens.validate(a).claims?.username, 'alice', 'a is cached')
  const result = tokens.validate(twin)
  t.equal(result.isValid, false, 'same key, other token: not a cache hit')
  t.match(result.error, /^The token (signature is invalid|is malformed)\.$/)
  t.equal(tokens.validate(a).claims?.username, 'alice', 'a is still served')
})

t.test('a cache hit is confirmed by the whole token, its signature compared in constant time', async (t) => {
  const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'
  const at = token.lastIndexOf('.') + 1
  t.equal(sameToken(token, token, at), true)
  t.equal(sameToken(token, `${token}`.slice(0), at), true, 'equal contents, another string')
  t.equal(sameToken(token, `x${token.slice(1)}`, at), false, 'first character differs')
  t.equal(sameToken(token, `${token.slice(0, -1)}m`, at), false, 'last character differs')
  t.equal(sameToken(token, token.slice(0, -1), at), false, 'shorter')
  t.equal(sameToken(token, `${token}A`, at), false, 'longer')
  t.equal(sameToken('', '', 0), true)
})

t.test('sameToken: a difference in the signed part or only in the dot is a miss too', async (t) => {
  const token = 'aaa.bbb.ccc'
  t.equal(sameToken(token, 'aaa.bbX.ccc', 8), false)
  t.equal(sameToken(token, 'aaa.bbbXccc', 8), false)
  t.equal(sameToken(token, 'aaa.bbb.ccX', 8), false)
  t.equal(sameToken(token, 'aaa.bbb.ccc', 8), true)
})
