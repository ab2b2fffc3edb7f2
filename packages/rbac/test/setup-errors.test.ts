// Issue 43 item 4: @trivium/rbac's setup refusals are TypeErrors with a stable code from one table
// (src/setup-errors.ts), and the README's "Setup errors" table lists exactly those codes.
import trivium, { type Middleware } from '@trivium/core'
import { SHARED_SETUP, UNKNOWN_OPTION } from '@trivium/core/internal'
import { type TriviumRbacOptions, triviumRbac } from '@trivium/rbac'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { readmeSetupCodes } from '../../../scripts/test/setup-errors-readme.js'
import { SETUP } from '../src/setup-errors.js'

// Enough of a SqlClient for the checks (migrate: false, no query runs before ready()).
// rbac runs after a middleware named auth: one that lets every call through stands in for it.
const noAuth: Middleware = (_call, next) => next()

const sql = { query() {}, transaction() {}, exec() {} } as unknown as TriviumRbacOptions['sql']

t.test("the README's table lists every code of the table, and nothing else", async (t) => {
  t.same(
    readmeSetupCodes(new URL('../README.md', import.meta.url)).sort(),
    [UNKNOWN_OPTION, 'TRV_SETUP_UNKNOWN_ENDPOINT', ...Object.keys(SETUP.rows)].sort(),
  )
  t.ok('TRV_SETUP_UNKNOWN_ENDPOINT' in SHARED_SETUP.rows)
})

t.test('each refusal is a TypeError with its code, its message unchanged', async (t) => {
  const endpoint = (config: Record<string, unknown>) => (app: FastifyInstance) =>
    app.trivium.endpoint('bad', { method: 'GET', url: '/bad', ...config }, () => ({}))
  const cases: [unknown, ((app: FastifyInstance) => void) | undefined, string, string][] = [
    [{}, undefined, 'TRV_RBAC_SQL_REQUIRED', 'the sql option (a SqlClient from @trivium/sql) is required'],
    [
      { sql, permissions: [] },
      undefined,
      'TRV_RBAC_REQUIREMENT_MAP',
      'permissions must be an object mapping endpoint names to lists of names',
    ],
    [
      { sql, roles: { x: [''] } },
      undefined,
      'TRV_RBAC_REQUIREMENT_LIST',
      'roles["x"] must be a list of non-empty strings',
    ],
    [{ sql, live: [1] }, undefined, 'TRV_RBAC_LIVE', 'live must be a list of endpoint names'],
    [{ sql, migrate: 1 }, undefined, 'TRV_RBAC_MIGRATE', 'migrate must be a boolean'],
    [{ sql: {}, migrate: false }, undefined, 'TRV_RBAC_SQL', 'sql must be a SqlClient from @trivium/sql'],
    [
      { sql, migrate: false, liveCacheMax: 1.5 },
      undefined,
      'TRV_RBAC_LIVE_CACHE_MAX',
      'liveCacheMax must be a positive integer',
    ],
    [
      { sql, migrate: false },
      endpoint({ permissions: [''] }),
      'TRV_RBAC_ENDPOINT_LIST',
      'endpoint "bad": permissions must be a list of non-empty strings',
    ],
    [
      { sql, migrate: false },
      endpoint({ liveRbac: 'yes' }),
      'TRV_RBAC_ENDPOINT_LIVE',
      'endpoint "bad": liveRbac must be a boolean',
    ],
    [
      { sql, migrate: false, live: ['bda'] },
      endpoint({}),
      'TRV_SETUP_UNKNOWN_ENDPOINT',
      'live names unknown endpoint "bda" (did you mean "bad"?)',
    ],
    [{ sql, rolse: {} }, undefined, UNKNOWN_OPTION, 'unknown option "rolse" (did you mean "roles"?)'],
  ]
  for (const [options, register, code, message] of cases) {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(trivium)
    app.trivium.use(noAuth, { name: 'auth' })
    const err = await app
      .register(triviumRbac, options as TriviumRbacOptions)
      .after(() => register?.(app))
      .ready()
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    t.ok(err instanceof TypeError, `${code}: a TypeError`)
    t.match(err, { code, message: `@trivium/rbac: ${message}` }, code)
  }
})

t.test('an endpoint named in the options but registered outside the plugin context is refused', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  app.trivium.use(noAuth, { name: 'auth' })
  await app.register(async (child) => {
    await child.register(triviumRbac, { sql, migrate: false, permissions: { open: ['p'] } })
  })
  app.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({}))
  const err = await app.ready().then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof TypeError)
  t.match(err, {
    code: 'TRV_RBAC_OUTSIDE_CONTEXT',
    message:
      '@trivium/rbac: endpoint "open" is named in this plugin\'s options, but it is registered outside the context @trivium/rbac was registered in: register @trivium/rbac in that context or an ancestor',
  })
})
