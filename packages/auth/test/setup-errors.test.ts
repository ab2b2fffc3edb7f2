// Issue 43 item 4: @trivium/auth's setup refusals are TypeErrors with a stable code from one table
// (src/setup-errors.ts), and the README's "Setup errors" table lists exactly those codes.
import triviumAuth, { createAuthMiddleware, RedisRevocationStore, TokenService } from '@trivium/auth'
import { SqlRevocationStore, SqlTokenLedger, SqlUserStore } from '@trivium/auth/sql'
import trivium from '@trivium/core'
import { SHARED_SETUP, UNKNOWN_OPTION } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'
import { readmeSetupCodes } from '../../../scripts/test/setup-errors-readme.js'
import { SETUP } from '../src/setup-errors.js'
import { ISSUER, SECRET } from './helpers.ts'

t.test("the README's table lists every code of the table, and nothing else", async (t) => {
  t.same(
    readmeSetupCodes(new URL('../README.md', import.meta.url)).sort(),
    [UNKNOWN_OPTION, 'TRV_SETUP_UNKNOWN_ENDPOINT', ...Object.keys(SETUP.rows)].sort(),
  )
  t.ok('TRV_SETUP_UNKNOWN_ENDPOINT' in SHARED_SETUP.rows)
})

/** The refusal `fn` throws, checked to be a TypeError with `code` and the message unchanged. */
function refused(
  t: { ok(v: unknown, m: string): void; match(v: unknown, p: object, m: string): void },
  fn: () => unknown,
  code: string,
  message: string,
) {
  let err: unknown
  try {
    fn()
  } catch (e) {
    err = e
  }
  t.ok(err instanceof TypeError, `${code}: a TypeError`)
  t.match(err, { code, message: `@trivium/auth: ${message}` }, code)
}

t.test('constructors refuse with a code', async (t) => {
  const tokens = (options: object) => () => new TokenService({ secret: SECRET, issuer: ISSUER, ...options })
  refused(t, () => new TokenService(null as never), 'TRV_AUTH_OPTIONS', 'options are required')
  refused(t, tokens({ clock: 1 }), 'TRV_AUTH_CLOCK', 'clock must be a function')
  refused(
    t,
    tokens({ verifiedCacheSize: -1 }),
    'TRV_AUTH_VERIFIED_CACHE_SIZE',
    'verifiedCacheSize must be a non-negative integer',
  )
  refused(
    t,
    tokens({ production: true, secret: 'x'.repeat(31) }),
    'TRV_AUTH_SECRET_PRODUCTION',
    'secret must be at least 32 bytes in production',
  )
  refused(
    t,
    tokens({ accessTokenTtlSeconds: 0 }),
    'TRV_AUTH_TTL',
    'accessTokenTtlSeconds must be a positive integer (seconds)',
  )
  refused(
    t,
    () => createAuthMiddleware({ publicEndpoints: [1] } as never),
    'TRV_AUTH_ENDPOINT_NAME',
    'endpoint names must be strings',
  )
  for (const [store, make] of [
    ['SqlUserStore', () => new SqlUserStore({} as never)],
    ['SqlRevocationStore', () => new SqlRevocationStore({ client: {} } as never)],
    ['SqlTokenLedger', () => new SqlTokenLedger({} as never)],
  ] as const) {
    refused(t, make, 'TRV_AUTH_SQL_CLIENT', `${store} needs a @trivium/sql client`)
  }
  refused(
    t,
    () => new RedisRevocationStore({ client: null } as never),
    'TRV_AUTH_REDIS_CLIENT',
    'RedisRevocationStore needs an ioredis client',
  )
  refused(
    t,
    () => new RedisRevocationStore({ client: {}, prefix: 1 } as never),
    'TRV_AUTH_REDIS_PREFIX',
    'prefix must be a string',
  )
  const durable = { entries() {}, add() {} }
  refused(
    t,
    () => new RedisRevocationStore({ client: {}, durable, mirror: {} } as never),
    'TRV_AUTH_DURABLE_CLIENT',
    'durable needs an ioredis client (missing get)',
  )
})

t.test('the plugin refuses with a code', async (t) => {
  const cases: [object, string, string][] = [
    [
      { cleanupIntervalMs: -1 },
      'TRV_AUTH_CLEANUP_INTERVAL',
      'cleanupIntervalMs must be a non-negative integer',
    ],
    [{ flows: 'yes' }, 'TRV_AUTH_FLOWS', 'flows must be an object'],
    [{ rolesProvider: 1 }, 'TRV_AUTH_ROLES_PROVIDER', 'rolesProvider must be a function'],
    [
      { secret: 'x'.repeat(31), allowWeakSecretForTesting: 'yes' },
      'TRV_AUTH_WEAK_SECRET_OPT_IN',
      'allowWeakSecretForTesting must be a boolean',
    ],
    [
      { flows: { basePth: '/auth' } },
      UNKNOWN_OPTION,
      'unknown option "flows.basePth" (did you mean "basePath"?)',
    ],
  ]
  for (const [options, code, message] of cases) {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    const err = await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER, ...options } as never).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof TypeError, `${code}: a TypeError`)
    t.match(err, { code, message: `@trivium/auth: ${message}` }, code)
  }
  const route = Fastify()
  t.teardown(() => route.close())
  await route.register(trivium)
  await route.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  refused(
    t,
    () => route.get('/x', { config: { triviumRoute: { name: 5 as never } } }, async () => ({})),
    'TRV_AUTH_ROUTE_NAME',
    'route GET /x: config.triviumRoute.name must be a string',
  )
})
