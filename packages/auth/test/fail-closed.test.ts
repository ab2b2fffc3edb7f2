// Rules that cannot be enforced refuse to start; what a verifier did not verify is never accepted; what
// handlers get cannot move a token's expiry.
import { randomBytes } from 'node:crypto'
import triviumAuth, { createAuthMiddleware, MemoryRevocationStore, TokenService } from '@trivium/auth'
import trivium, { TriviumCall } from '@trivium/core'
import { enforcesSettings, jsonFormat } from '@trivium/core/internal'
import { triviumRbac } from '@trivium/rbac'
import { connectPostgres } from '@trivium/sql'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { alice, ISSUER, manualClock, SECRET } from './helpers.js'

const PG_URL = process.env.TRIVIUM_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test'

async function database(t: Test) {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const sql = await connectPostgres({ connectionString: PG_URL, schema, max: 2 })
  t.teardown(async () => {
    await sql.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await sql.close()
  })
  return sql
}

async function app(t: Test): Promise<FastifyInstance> {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(trivium)
  await fastify.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  return fastify
}

const rbacFix = 'register @trivium/rbac in this context or an ancestor'

t.test('permissions or roles on an endpoint without @trivium/rbac refuse to start', async (t) => {
  for (const [key, value] of [
    ['permissions', ['admin:all']],
    ['roles', ['admin']],
  ] as const) {
    const fastify = await app(t)
    fastify.trivium.endpoint('admin.purge', { method: 'POST', url: '/purge', [key]: value }, () => ({}))
    await t.rejects(async () => fastify.ready(), {
      message: `@trivium/core: endpoint "admin.purge" declares ${key}: ${JSON.stringify(value)}, but no middleware enforces "${key}" where it is registered: ${rbacFix}`,
    })
  }
})

t.test('@trivium/rbac in a sibling context does not cover an endpoint; in an ancestor it does', async (t) => {
  const sql = await database(t)
  const sibling = await app(t)
  await sibling.register(async (child) => {
    await child.register(triviumRbac, { sql })
  })
  await sibling.register(async (child) => {
    child.trivium.endpoint('admin.purge', { method: 'POST', url: '/purge', roles: ['admin'] }, () => ({}))
  })
  await t.rejects(async () => sibling.ready(), {
    message: `@trivium/core: endpoint "admin.purge" declares roles: ["admin"], but no middleware enforces "roles" where it is registered: ${rbacFix}`,
  })

  const ancestor = await app(t)
  await ancestor.register(triviumRbac, { sql })
  await ancestor.register(async (child) => {
    child.trivium.endpoint('admin.purge', { method: 'POST', url: '/purge', roles: ['admin'] }, () => ({}))
  })
  await ancestor.ready()
  const token = await ancestor.triviumAuth.issueAccessToken({ ...alice, roles: ['member'] })
  const refused = await ancestor.inject({
    method: 'POST',
    url: '/purge',
    headers: { authorization: `Bearer ${token}` },
  })
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().message, 'Insufficient roles. Required: admin')
})

t.test('an rbac option naming an endpoint outside its context refuses to start', async (t) => {
  const sql = await database(t)
  const fastify = await app(t)
  await fastify.register(async (child) => {
    await child.register(triviumRbac, { sql, permissions: { 'admin.purge': ['admin:all'] } })
  })
  fastify.trivium.endpoint('admin.purge', { method: 'POST', url: '/purge' }, () => ({}))
  await t.rejects(async () => fastify.ready(), {
    message:
      '@trivium/rbac: endpoint "admin.purge" is named in this plugin\'s options, but it is registered outside the context @trivium/rbac was registered in: register @trivium/rbac in that context or an ancestor',
  })
})

t.test('a misspelt endpoint setting is refused with the closest name', async (t) => {
  const fastify = await app(t)
  fastify.trivium.endpoint(
    'admin.purge',
    { method: 'POST', url: '/purge', permisions: ['admin:all'] } as never,
    () => ({}),
  )
  await t.rejects(async () => fastify.ready(), {
    message:
      '@trivium/core: endpoint "admin.purge": unknown setting "permisions" (did you mean "permissions"?). A setting read by your own middleware is declared with enforcesSettings(["permisions"], middleware).',
  })
  // A setting the application's own middleware declares is known, and enforced where it runs.
  const own = await app(t)
  own.trivium.use(
    enforcesSettings(['tenant'], (_call, next) => next()),
    { name: 'tenant' },
  )
  own.trivium.endpoint('a', { method: 'GET', url: '/a', tenant: 'x' } as never, () => ({}))
  await own.ready()
})

t.test('auth: required or optional on an endpoint without @trivium/auth refuses to start', async (t) => {
  for (const mode of ['required', 'optional'] as const) {
    const fastify = Fastify()
    t.teardown(() => fastify.close())
    await fastify.register(trivium)
    fastify.trivium.endpoint('me', { method: 'GET', url: '/me', auth: mode }, () => ({}))
    await t.rejects(async () => fastify.ready(), {
      message: `@trivium/core: endpoint "me" declares auth: "${mode}", but no middleware enforces "auth" where it is registered: register @trivium/auth in this context or an ancestor`,
    })
  }
  const open = Fastify()
  t.teardown(() => open.close())
  await open.register(trivium)
  open.trivium.endpoint('health', { method: 'GET', url: '/health', auth: 'public' }, () => ({}))
  await open.ready()
})

t.test('timeoutMs must be a positive integer number of milliseconds', async (t) => {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(trivium)
  for (const timeoutMs of [-1, 0, 1.5, Number.NaN, 2 ** 31]) {
    t.throws(() => fastify.trivium.endpoint('slow', { method: 'GET', url: '/slow', timeoutMs }, () => ({})), {
      message: `@trivium/core: endpoint "slow": timeoutMs must be a positive integer number of milliseconds (at most 2147483647), got ${String(timeoutMs)}`,
    })
  }
})

/** A call of `endpoint` over a frame connection with `token` in its metadata. */
function frameCall(fastify: FastifyInstance, connection: object, token: string) {
  const definition = fastify.trivium.registry.get('me')
  if (definition === undefined) throw new Error('no endpoint')
  return new TriviumCall({
    definition,
    protocol: 'tcp',
    requestId: 'c1:1',
    log: fastify.log,
    metadata: { auth_token: token },
    connection: connection as Record<string, unknown>,
    decodeBody: () => ({}),
  })
}

t.test("a connection's last token counts only for the verifier that verified it", async (t) => {
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(trivium)
  fastify.trivium.endpoint('me', { method: 'GET', url: '/me', auth: 'public' }, () => ({}))
  await fastify.ready()
  const revocation = new MemoryRevocationStore()
  const tokensA = new TokenService({ secret: SECRET, issuer: ISSUER })
  const tokensB = new TokenService({ secret: `${SECRET}-other-audience`, issuer: ISSUER })
  const first = createAuthMiddleware({ tokens: tokensA, revocation })
  const second = createAuthMiddleware({ tokens: tokensB, revocation })
  const connection = {}
  const token = tokensA.issueAccessToken({ userId: 7, username: 'alice', email: 'a@example.com' })
  const config = { auth: 'required' as const }
  const withConfig = (call: TriviumCall) => {
    Object.defineProperty(call, 'definition', { value: { ...call.definition, config } })
    return call
  }
  await first(withConfig(frameCall(fastify, connection, token)), async () => 'ok')
  await t.rejects(async () => second(withConfig(frameCall(fastify, connection, token)), async () => 'ok'), {
    statusCode: 401,
    message: 'Invalid token: The token signature is invalid.',
  })
})

t.test('a handler that changes the expiry it was given changes nothing', async (t) => {
  const clock = manualClock(Date.now())
  const fastify = Fastify()
  t.teardown(() => fastify.close())
  await fastify.register(trivium)
  await fastify.register(triviumAuth, { secret: SECRET, issuer: ISSUER, clock })
  fastify.trivium.endpoint('me', { method: 'GET', url: '/me' }, (_req, call) => {
    const claims = call.context.token_claims as { expiresAt: Date }
    claims.expiresAt.setTime(Date.now() + 10 * 365 * 86_400_000)
    t.throws(() => {
      ;(call.identity as { expiresAt?: number }).expiresAt = Number.MAX_SAFE_INTEGER
    }, TypeError)
    return { expiresAt: call.identity?.expiresAt }
  })
  await fastify.ready()
  const token = await fastify.triviumAuth.issueAccessToken(alice, { ttlSeconds: 60 })
  const invoke = (connection: object) =>
    fastify.trivium.invoke({
      endpoint: 'me',
      protocol: 'tcp',
      payload: new TextEncoder().encode('{}'),
      format: jsonFormat,
      requestId: 'c1:1',
      log: fastify.log,
      metadata: { auth_token: token },
      connection: connection as Record<string, unknown>,
    })
  const first = await invoke({})
  const expiresAt = (first.result as { expiresAt: number }).expiresAt
  t.ok(expiresAt <= clock() + 60_000)
  // Another connection, after the handler moved the Date it was given: the same expiry, and expired on time.
  const later = {}
  t.same((await invoke(later)).result, { expiresAt }, 'the claims a cache shares kept their expiry')
  clock.advance(61_000)
  await t.rejects(invoke(later), { statusCode: 401, message: 'Token has expired' })
})
