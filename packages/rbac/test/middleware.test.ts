import trivium, { type Middleware, MiddlewareOrderError } from '@trivium/core'
import { type TriviumRbacOptions, triviumRbac } from '@trivium/rbac'
import type { SqlClient } from '@trivium/sql'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { engines } from './helpers.ts'

const pglite = engines.find((e) => e.name === 'pglite')!

// A stand-in for @trivium/auth: reads the user from headers and sets `call.identity`.
const fakeAuth: Middleware = (call, next) => {
  const user = call.headers['x-user']
  if (typeof user === 'string') {
    call.identity = {
      userId: Number(user),
      roles: String(call.headers['x-roles'] ?? '')
        .split(',')
        .filter(Boolean),
      permissions: String(call.headers['x-perms'] ?? '')
        .split(',')
        .filter(Boolean),
    }
  }
  return next()
}

async function build(
  t: { teardown(fn: () => unknown): void },
  sql: SqlClient,
  options: Omit<TriviumRbacOptions, 'sql'> = {},
  register?: (app: FastifyInstance) => void,
): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  app.trivium.use(fakeAuth, { name: 'auth' })
  await app.register(triviumRbac, { sql, ...options })
  app.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({ ok: true }))
  app.trivium.endpoint(
    'tasks.list',
    { method: 'GET', url: '/tasks', permissions: ['tasks:read', 'tasks:write'] },
    () => ({ ok: true }),
  )
  app.trivium.endpoint('admin.stats', { method: 'GET', url: '/admin', roles: ['admin', 'ops'] }, () => ({
    ok: true,
  }))
  app.trivium.endpoint(
    'both',
    { method: 'GET', url: '/both', permissions: ['tasks:write'], roles: ['admin'] },
    () => ({ ok: true }),
  )
  app.trivium.endpoint('mapped', { method: 'GET', url: '/mapped' }, () => ({ ok: true }))
  register?.(app)
  await app.ready()
  return app
}

function as(user: number | null, roles: string[] = [], perms: string[] = []): Record<string, string> {
  return user === null
    ? {}
    : { 'x-user': String(user), 'x-roles': roles.join(','), 'x-perms': perms.join(',') }
}

t.test('middleware: exact messages, any-of, both lists', async (t) => {
  const { client: sql } = await pglite.open(t)
  const app = await build(t, sql, {
    permissions: { mapped: ['reports:read'] },
    roles: { mapped: ['auditor'] },
  })
  const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url, headers })

  // not authenticated: passes unchecked (authentication decides, not authorization)
  t.equal((await get('/tasks', as(null))).statusCode, 200)
  // authenticated, no requirements
  t.equal((await get('/open', as(1))).statusCode, 200)

  const denied = await get('/tasks', as(1, ['admin'], ['other:perm']))
  t.equal(denied.statusCode, 403)
  t.match(denied.json(), {
    statusCode: 403,
    code: 'TRV_FORBIDDEN',
    error: 'ForbiddenException',
    message: 'Insufficient permissions. Required: tasks:read, tasks:write',
  })
  // any-of: one of the listed permissions is enough
  t.equal((await get('/tasks', as(1, [], ['tasks:write']))).statusCode, 200)
  t.equal((await get('/tasks', as(1, [], ['tasks:read']))).statusCode, 200)

  const noRole = await get('/admin', as(1, ['user'], ['tasks:read']))
  t.equal(noRole.statusCode, 403)
  t.equal(noRole.json().message, 'Insufficient roles. Required: admin, ops')
  t.equal((await get('/admin', as(1, ['ops']))).statusCode, 200)

  // both lists: both must pass; permissions are checked first
  t.equal(
    (await get('/both', as(1, [], []))).json().message,
    'Insufficient permissions. Required: tasks:write',
  )
  t.equal(
    (await get('/both', as(1, ['user'], ['tasks:write']))).json().message,
    'Insufficient roles. Required: admin',
  )
  t.equal(
    (await get('/both', as(1, ['admin'], []))).json().message,
    'Insufficient permissions. Required: tasks:write',
  )
  t.equal((await get('/both', as(1, ['admin'], ['tasks:write']))).statusCode, 200)

  // requirements from the option maps
  t.equal(
    (await get('/mapped', as(1, ['auditor'], []))).json().message,
    'Insufficient permissions. Required: reports:read',
  )
  t.equal(
    (await get('/mapped', as(1, [], ['reports:read']))).json().message,
    'Insufficient roles. Required: auditor',
  )
  t.equal((await get('/mapped', as(1, ['auditor'], ['reports:read']))).statusCode, 200)

  // through invoke (the path WebSocket and TCP use): the same error
  const viaFrames = await app.trivium
    .invoke({
      endpoint: 'tasks.list',
      protocol: 'tcp',
      requestId: 'c1:1',
      log: app.log,
      payload: Buffer.from('{}'),
      format: app.trivium.formats.get('json')!,
      headers: as(1, [], ['nope']),
    })
    .catch((e: Error) => e)
  t.equal((viaFrames as Error).message, 'Insufficient permissions. Required: tasks:read, tasks:write')
})

t.test('middleware: an option map entry replaces the endpoint declaration', async (t) => {
  const { client: sql } = await pglite.open(t)
  const app = await build(t, sql, {
    permissions: { 'tasks.list': ['tasks:admin'] },
    roles: { 'admin.stats': [] },
  })
  const r = await app.inject({ method: 'GET', url: '/tasks', headers: as(1, [], ['tasks:read']) })
  t.equal(r.json().message, 'Insufficient permissions. Required: tasks:admin')
  const a = await app.inject({ method: 'GET', url: '/admin', headers: as(1, [], []) })
  t.equal(a.statusCode, 200, 'an empty list in the map lifts the declared requirement')
})

t.test('ordering: rbac before auth, or without auth, fails at ready()', async (t) => {
  const { client: sql } = await pglite.open(t)
  const early = Fastify()
  await early.register(trivium)
  await early.register(triviumRbac, { sql })
  early.trivium.use(fakeAuth, { name: 'auth' })
  const err = await early.ready().then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof MiddlewareOrderError)
  t.equal((err as Error).message, '@trivium/core: "rbac" must be registered after "auth"')
  await early.close()

  const alone = Fastify()
  await alone.register(trivium)
  await alone.register(triviumRbac, { sql })
  await t.rejects(async () => alone.ready(), {
    message: '@trivium/core: "rbac" needs "auth", which is not registered',
  })
  await alone.close()

  const noCore = Fastify()
  await t.rejects(async () => noCore.register(triviumRbac, { sql }).ready(), /@trivium\/core/)
  await noCore.close()
})

t.test('options are validated at registration and at ready()', async (t) => {
  const { client: sql } = await pglite.open(t)
  const attempt = async (options: unknown, register?: (app: FastifyInstance) => void) => {
    const app = Fastify()
    await app.register(trivium)
    app.trivium.use(fakeAuth, { name: 'auth' })
    try {
      await app.register(triviumRbac, options as TriviumRbacOptions)
      register?.(app)
      await app.ready()
      return 'ok'
    } catch (err) {
      return (err as Error).message
    } finally {
      await app.close()
    }
  }
  t.equal(await attempt({}), '@trivium/rbac: the sql option (a SqlClient from @trivium/sql) is required')
  t.equal(
    await attempt({ sql, permissions: [] }),
    '@trivium/rbac: permissions must be an object mapping endpoint names to lists of names',
  )
  t.equal(
    await attempt({ sql, roles: { x: 'admin' } }),
    '@trivium/rbac: roles["x"] must be a list of non-empty strings',
  )
  t.equal(await attempt({ sql, live: 'x' }), '@trivium/rbac: live must be a list of endpoint names')
  t.equal(await attempt({ sql, migrate: 'yes' }), '@trivium/rbac: migrate must be a boolean')
  t.equal(
    await attempt({ sql, liveCacheTtlMs: -5 }),
    '@trivium/rbac: liveCacheTtlMs must be an integer >= 0 (ms)',
  )
  t.equal(
    await attempt({ sql, permissions: { 'tasks.lst': ['tasks:read'] } }, (app) =>
      app.trivium.endpoint('tasks.list', { method: 'GET', url: '/tasks' }, () => ({})),
    ),
    '@trivium/rbac: permissions names unknown endpoint "tasks.lst" (did you mean "tasks.list"?)',
  )
  t.equal(
    await attempt({ sql, live: ['opne'] }, (app) =>
      app.trivium.endpoint('open', { method: 'GET', url: '/open' }, () => ({})),
    ),
    '@trivium/rbac: live names unknown endpoint "opne" (did you mean "open"?)',
  )
  t.equal(
    await attempt({ sql }, (app) =>
      app.trivium.endpoint('bad', { method: 'GET', url: '/bad', roles: 'admin' as never }, () => ({})),
    ),
    '@trivium/rbac: endpoint "bad": roles must be a list of non-empty strings',
  )
  t.equal(
    await attempt({ sql }, (app) =>
      app.trivium.endpoint('bad', { method: 'GET', url: '/bad', liveRbac: 1 as never }, () => ({})),
    ),
    '@trivium/rbac: endpoint "bad": liveRbac must be a boolean',
  )
  t.equal(await attempt({ sql }), 'ok')
})

for (const engine of engines) {
  t.test(
    `${engine.name}: plugin migrates, decorates fastify.rbac, and liveRbac reads current rights`,
    async (t) => {
      const { client } = await engine.open(t)
      const app = await build(t, client, { liveCacheTtlMs: 60_000 }, (app) => {
        app.trivium.endpoint(
          'admin.users.delete',
          { method: 'DELETE', url: '/admin/users/:id', roles: ['admin'], liveRbac: true },
          () => ({ ok: true }),
        )
        app.trivium.endpoint(
          'reports.live',
          { method: 'GET', url: '/reports', permissions: ['reports:read'], liveRbac: true },
          () => ({ ok: true }),
        )
      })
      const rbac = app.rbac
      const perm = await rbac.createPermission('reports:read', '', 'reports', 'read')
      const admin = await rbac.createRole('admin', 'Administrators', [perm.id])
      await rbac.assignRole(42, admin.id, 1)

      // the token snapshot says admin, the database agrees
      const token = as(42, ['admin'], ['reports:read'])
      t.equal((await app.inject({ method: 'DELETE', url: '/admin/users/1', headers: token })).statusCode, 200)
      t.equal((await app.inject({ method: 'GET', url: '/reports', headers: token })).statusCode, 200)

      // revoked: the snapshot still claims admin, but the live endpoints refuse at once
      await rbac.revokeRole(42, admin.id, 1)
      const del = await app.inject({ method: 'DELETE', url: '/admin/users/1', headers: token })
      t.equal(del.statusCode, 403)
      t.equal(del.json().message, 'Insufficient roles. Required: admin')
      t.equal(
        (await app.inject({ method: 'GET', url: '/reports', headers: token })).json().message,
        'Insufficient permissions. Required: reports:read',
      )
      // a snapshot endpoint keeps trusting the token until it expires (documented)
      t.equal((await app.inject({ method: 'GET', url: '/admin', headers: token })).statusCode, 200)

      // the live check ignores the token's claims entirely: a user with no roles in the token but
      // with the role in the database passes
      await rbac.assignRole(43, admin.id)
      t.equal(
        (await app.inject({ method: 'DELETE', url: '/admin/users/1', headers: as(43) })).statusCode,
        200,
      )
    },
  )
}

t.test('liveRbac: a database that is down answers 503, not 500 or 403', async (t) => {
  const { client: sql } = await engines.find((e) => e.name === 'postgres')!.open(t)
  const app = await build(t, sql, { live: ['admin.stats'], liveCacheTtlMs: 0 })
  await sql.close()
  const r = await app.inject({ method: 'GET', url: '/admin', headers: as(1, ['admin']) })
  t.equal(r.statusCode, 503)
  t.match(r.json(), {
    code: 'TRV_SERVICE_UNAVAILABLE',
    error: 'ServiceUnavailableException',
    message: 'Database unavailable',
  })
})
