import { type TriviumError, toErrorBody } from '@trivium/core'
import { migrateRbac, RbacService, referenceUsers } from '@trivium/rbac'
import { appliedMigrations } from '@trivium/sql'
import t from 'tap'
import { engines } from './helpers.ts'

async function setup(t: Parameters<(typeof engines)[number]['open']>[0], engine: (typeof engines)[number]) {
  const { client, extra } = await engine.open(t)
  await migrateRbac(client)
  const rbac = new RbacService(client)
  const read = await rbac.createPermission('tasks:read', 'Read tasks', 'tasks', 'read')
  const write = await rbac.createPermission('tasks:write', 'Write tasks', 'tasks', 'write')
  const admin = await rbac.createPermission('admin:all', 'Everything', 'admin', 'all')
  return { client, extra, rbac, read, write, admin }
}

async function errorOf(p: Promise<unknown>): Promise<ReturnType<typeof toErrorBody>> {
  try {
    await p
  } catch (err) {
    return toErrorBody(err as TriviumError)
  }
  throw new Error('expected a rejection')
}

for (const engine of engines) {
  t.test(`${engine.name}: migrations are recorded and idempotent`, async (t) => {
    const { client } = await engine.open(t)
    await migrateRbac(client)
    await migrateRbac(client)
    t.same(await appliedMigrations(client, 'rbac'), [1])
  })

  t.test(`${engine.name}: createPermission and createRole return the spec's records`, async (t) => {
    const { rbac, read, write } = await setup(t, engine)
    t.match(read, { name: 'tasks:read', description: 'Read tasks', resource: 'tasks', action: 'read' })
    t.equal(typeof read.id, 'number')
    t.ok(read.created_at instanceof Date)
    t.same(Object.keys(read).sort(), ['action', 'created_at', 'description', 'id', 'name', 'resource'])
    const editor = await rbac.createRole('editor', 'Edits tasks', [read.id, write.id, read.id])
    t.same(Object.keys(editor).sort(), ['created_at', 'description', 'id', 'name'])
    t.match(editor, { name: 'editor', description: 'Edits tasks' })
    t.ok(editor.created_at instanceof Date)
    t.same(
      (await rbac.getRolePermissions(editor.id)).map((p) => p.name),
      ['tasks:read', 'tasks:write'],
    )
    const empty = await rbac.createRole('nobody', '', [])
    t.same(await rbac.getRolePermissions(empty.id), [])
    t.same((await rbac.getRoleByName('editor'))?.id, editor.id)
    t.equal(await rbac.getRoleByName('missing'), null)
    t.same((await rbac.getPermissionByName('tasks:write'))?.id, write.id)
    t.equal(await rbac.getPermissionByName('missing'), null)
    t.same(
      (await rbac.listRoles()).map((r) => r.name),
      ['editor', 'nobody'],
    )
    t.same(
      (await rbac.listPermissions()).map((p) => p.name),
      ['admin:all', 'tasks:read', 'tasks:write'],
    )
    t.same((await rbac.getRole(editor.id))?.name, 'editor')
  })

  t.test(
    `${engine.name}: createRole is atomic: an unknown permission or duplicate name leaves nothing`,
    async (t) => {
      const { client, rbac, read } = await setup(t, engine)
      t.same(await errorOf(rbac.createRole('ghost', 'x', [read.id, 9999])), {
        statusCode: 404,
        code: 'TRV_NOT_FOUND',
        error: 'NotFoundException',
        message: 'Permission 9999 not found',
      })
      t.same(
        (await errorOf(rbac.createRole('ghost', 'x', [9998, 9999]))).message,
        'Permissions not found: 9998, 9999',
      )
      t.equal(await rbac.getRoleByName('ghost'), null)
      await rbac.createRole('viewer', 'reads', [read.id])
      t.same(await errorOf(rbac.createRole('viewer', 'again', [read.id])), {
        statusCode: 409,
        code: 'TRV_CONFLICT',
        error: 'ConflictException',
        message: 'Role "viewer" already exists',
      })
      const counts = await client.query<{ roles: number; links: number }>(
        'SELECT (SELECT count(*)::int FROM roles) AS roles, (SELECT count(*)::int FROM role_permissions) AS links',
      )
      t.same(counts.rows, [{ roles: 1, links: 1 }], 'only the good role and its one link exist')
    },
  )

  t.test(`${engine.name}: createPermission rejects duplicates and bad input with typed errors`, async (t) => {
    const { rbac } = await setup(t, engine)
    t.same(await errorOf(rbac.createPermission('tasks:read', 'again', 'tasks', 'read')), {
      statusCode: 409,
      code: 'TRV_CONFLICT',
      error: 'ConflictException',
      message: 'Permission "tasks:read" already exists',
    })
    t.equal(
      (await errorOf(rbac.createPermission('', 'x', 'tasks', 'read'))).message,
      'name must be a non-empty string without surrounding spaces',
    )
    t.equal(
      (await errorOf(rbac.createPermission('x', 'x', 'tasks', ' read'))).message,
      'action must be a non-empty string without surrounding spaces',
    )
    t.equal(
      (await errorOf(rbac.createPermission('a'.repeat(101), 'x', 'tasks', 'read'))).message,
      'name must be at most 100 characters',
    )
    t.equal(
      (await errorOf(rbac.createPermission('x', 42 as unknown as string, 'tasks', 'read'))).message,
      'description must be a string',
    )
    t.equal(
      (await errorOf(rbac.createRole('r', 'x', [1.5]))).message,
      'permissionIds must be a list of positive integers',
    )
    t.equal(
      (await errorOf(rbac.createRole('r', 'x', 'nope' as unknown as number[]))).message,
      'permissionIds must be a list of positive integers',
    )
  })

  t.test(`${engine.name}: assignment state table: none → active → revoked → active`, async (t) => {
    const { rbac, read, write, admin } = await setup(t, engine)
    const editor = await rbac.createRole('editor', '', [read.id, write.id])
    const boss = await rbac.createRole('boss', '', [read.id, admin.id])

    // none → active: assigned_at and assigned_by set
    const a1 = await rbac.assignRole(7, editor.id, 1)
    t.match(a1, { user_id: 7, role_id: editor.id, assigned_by: 1, revoked_at: null, revoked_by: null })
    t.ok(a1.assigned_at instanceof Date)
    t.equal(await rbac.userHasRole(7, 'editor'), true)

    // active → assign again: unchanged (original assigned_at/assigned_by kept)
    const a2 = await rbac.assignRole(7, editor.id, 2)
    t.same(a2, a1)

    // active → revoked: revoked_at and revoked_by set
    const r1 = await rbac.revokeRole(7, editor.id, 3)
    t.match(r1, { user_id: 7, role_id: editor.id, assigned_by: 1, revoked_by: 3 })
    t.ok(r1?.revoked_at instanceof Date)
    t.equal(await rbac.userHasRole(7, 'editor'), false)
    t.same(await rbac.getUserRoles(7), [])
    t.same(await rbac.getUserPermissions(7), [])

    // revoked → revoke again: nothing to revoke
    t.equal(await rbac.revokeRole(7, editor.id, 4), null)
    t.match(await rbac.getAssignment(7, editor.id), { revoked_by: 3 })

    // revoked → active: revoked_at cleared, assigned_at and assigned_by overwritten
    await new Promise((r) => setTimeout(r, 5))
    const a3 = await rbac.assignRole(7, editor.id, 5)
    t.match(a3, { user_id: 7, role_id: editor.id, assigned_by: 5, revoked_at: null, revoked_by: null })
    t.ok(a3.assigned_at.getTime() > a1.assigned_at.getTime(), 'assigned_at overwritten')
    t.equal((await rbac.getUserAssignments(7)).length, 1, 'still one row')

    // assigner is optional
    const a4 = await rbac.assignRole(7, boss.id)
    t.equal(a4.assigned_by, null)
    const r2 = await rbac.revokeRole(8, boss.id)
    t.equal(r2, null, 'a user without the role: nothing to revoke')

    t.same(
      (await rbac.getUserRoles(7)).map((r) => r.name),
      ['boss', 'editor'],
    )
    // distinct permissions through active roles only (tasks:read comes through both roles once)
    t.same(
      (await rbac.getUserPermissions(7)).map((p) => p.name),
      ['admin:all', 'tasks:read', 'tasks:write'],
    )
    t.equal(await rbac.userHasPermission(7, 'tasks:write'), true)
    t.equal(await rbac.userHasPermission(7, 'nope'), false)
    t.equal(await rbac.userHasPermission(8, 'tasks:read'), false)
    t.same(await rbac.getUserRights(7), {
      roles: ['boss', 'editor'],
      permissions: ['admin:all', 'tasks:read', 'tasks:write'],
    })

    await rbac.revokeRole(7, boss.id, 1)
    t.same(
      (await rbac.getUserPermissions(7)).map((p) => p.name),
      ['tasks:read', 'tasks:write'],
      'permissions of a revoked role no longer count',
    )
    t.equal(await rbac.userHasPermission(7, 'admin:all'), false)
    t.same(await rbac.getUserRights(8), { roles: [], permissions: [] })
  })

  t.test(`${engine.name}: unknown ids and malformed ids are typed errors`, async (t) => {
    const { rbac } = await setup(t, engine)
    const notFound = {
      statusCode: 404,
      code: 'TRV_NOT_FOUND',
      error: 'NotFoundException',
      message: 'Role 4242 not found',
    }
    t.same(await errorOf(rbac.assignRole(1, 4242)), notFound)
    t.same(await errorOf(rbac.revokeRole(1, 4242)), notFound)
    t.same(await errorOf(rbac.getRolePermissions(4242)), notFound)
    t.same(await errorOf(rbac.getUserRoles(0)), {
      statusCode: 400,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'userId must be a positive integer',
      details: [{ field: 'userId', message: 'userId must be a positive integer' }],
    })
    t.equal((await errorOf(rbac.assignRole(1, 2 ** 31))).message, 'roleId must be a positive integer')
    t.equal((await errorOf(rbac.assignRole(1, 1, -1))).message, 'assignedBy must be a positive integer')
    t.equal((await errorOf(rbac.revokeRole(1, 1, 1.5))).message, 'revokedBy must be a positive integer')
    t.equal(
      (await errorOf(rbac.userHasRole('1' as unknown as number, 'x'))).message,
      'userId must be a positive integer',
    )
    t.equal((await errorOf(rbac.userHasRole(1, 5 as unknown as string))).message, 'roleName must be a string')
  })

  t.test(`${engine.name}: userExists option checks user ids on assignment`, async (t) => {
    const { client } = await engine.open(t)
    await migrateRbac(client)
    const rbac = new RbacService(client, { userExists: (id) => id < 100 })
    const role = await rbac.createRole('r', '', [])
    await rbac.assignRole(5, role.id)
    t.same(await errorOf(rbac.assignRole(500, role.id)), {
      statusCode: 404,
      code: 'TRV_NOT_FOUND',
      error: 'NotFoundException',
      message: 'User 500 not found',
    })
  })

  t.test(
    `${engine.name}: usersTable: assign/revoke for a user that does not exist is a 404, and the database refuses it`,
    async (t) => {
      const { client } = await engine.open(t)
      await client.exec('CREATE TABLE app_users (id bigserial PRIMARY KEY, name text NOT NULL)')
      await client.exec("INSERT INTO app_users (name) VALUES ('ann'), ('bob')")
      await migrateRbac(client)
      await referenceUsers(client, 'app_users')
      await referenceUsers(client, 'app_users') // idempotent
      const rbac = new RbacService(client, { usersTable: 'app_users' })
      const role = await rbac.createRole('admin', '', [])
      await rbac.assignRole(2, role.id)
      const missing = {
        statusCode: 404,
        code: 'TRV_NOT_FOUND',
        error: 'NotFoundException',
        message: 'User 999999 not found',
      }
      t.same(await errorOf(rbac.assignRole(999999, role.id)), missing)
      t.same(await errorOf(rbac.revokeRole(999999, role.id)), missing)
      // Without the check in the service (e.g. a service over a transaction), the foreign key refuses it.
      const bare = new RbacService(client)
      t.same(await errorOf(bare.assignRole(999999, role.id)), missing)
      t.equal(
        (await client.query('SELECT 1 FROM user_roles WHERE user_id = 999999')).rows.length,
        0,
        'nothing stored',
      )
      // A user registered later does not inherit anything assigned before it existed.
      await client.exec("INSERT INTO app_users (name) VALUES ('carl')")
      t.same(await rbac.getUserRights(3), { roles: [], permissions: [] })
      t.throws(() => new RbacService(client, { usersTable: 'users; DROP TABLE x' }), {
        code: 'TRV_RBAC_USERS_TABLE',
        message: '@trivium/rbac: usersTable must be a lower-case SQL identifier (e.g. "auth_users")',
      })
    },
  )

  t.test(`${engine.name}: liveRights caches for the TTL and is invalidated by assign/revoke`, async (t) => {
    const { client, rbac, read } = await setup(t, engine)
    const role = await rbac.createRole('reader', '', [read.id])
    await rbac.assignRole(3, role.id)
    t.same(await rbac.liveRights(3), { roles: ['reader'], permissions: ['tasks:read'] })
    // changed behind the service's back: the cache answers until the TTL passes
    await client.query('UPDATE user_roles SET revoked_at = now() WHERE user_id = 3')
    t.same(await rbac.liveRights(3), { roles: ['reader'], permissions: ['tasks:read'] }, 'cached')
    rbac.invalidateLive()
    t.same(await rbac.liveRights(3), { roles: [], permissions: [] }, 'fresh after invalidation')
    await rbac.assignRole(3, role.id)
    t.same(await rbac.liveRights(3), { roles: ['reader'], permissions: ['tasks:read'] }, 'assign invalidates')
    await rbac.revokeRole(3, role.id)
    t.same(await rbac.liveRights(3), { roles: [], permissions: [] }, 'revoke invalidates')

    // A TTL a loaded machine cannot outrun between the two reads (20 ms could pass during the UPDATE).
    const short = new RbacService(client, { liveCacheTtlMs: 1000 })
    await rbac.assignRole(3, role.id)
    t.same((await short.liveRights(3)).roles, ['reader'])
    await client.query('UPDATE user_roles SET revoked_at = now() WHERE user_id = 3')
    t.same((await short.liveRights(3)).roles, ['reader'], 'cached within TTL')
    await new Promise((r) => setTimeout(r, 1100))
    t.same((await short.liveRights(3)).roles, [], 'expired after TTL')

    const none = new RbacService(client, { liveCacheTtlMs: 0, liveCacheMax: 1 })
    t.same((await none.liveRights(3)).roles, [])
  })

  t.test(`${engine.name}: constructor options are validated`, async (t) => {
    const { client } = await engine.open(t)
    t.throws(() => new RbacService(undefined as never), {
      code: 'TRV_RBAC_SQL',
      message: '@trivium/rbac: sql must be a SqlClient from @trivium/sql',
    })
    t.throws(() => new RbacService(client, { liveCacheTtlMs: -1 }), {
      code: 'TRV_RBAC_LIVE_CACHE_TTL',
      message: '@trivium/rbac: liveCacheTtlMs must be an integer >= 0 (ms)',
    })
    t.throws(() => new RbacService(client, { liveCacheMax: 0 }), {
      code: 'TRV_RBAC_LIVE_CACHE_MAX',
      message: '@trivium/rbac: liveCacheMax must be a positive integer',
    })
    t.throws(() => new RbacService(client, { userExists: 1 as never }), {
      code: 'TRV_RBAC_USER_EXISTS',
      message: '@trivium/rbac: userExists must be a function',
    })
  })
}

t.test('postgres: concurrent assign/revoke races keep one row per (user, role)', async (t) => {
  const pgEngine = engines.find((e) => e.name === 'postgres')!
  const { client, extra, rbac } = await setup(t, pgEngine)
  const second = new RbacService(await extra())
  const role = await rbac.createRole('racer', '', [])
  const other = await rbac.createRole('other', '', [])
  const ops: Promise<unknown>[] = []
  for (let i = 0; i < 20; i++) {
    const svc = i % 2 === 0 ? rbac : second
    ops.push(svc.assignRole(11, role.id, i + 1))
    ops.push(svc.revokeRole(11, role.id, i + 1))
    ops.push(svc.assignRole(11, other.id, i + 1))
  }
  const results = await Promise.allSettled(ops)
  t.same(
    results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
    [],
    'no operation failed',
  )
  const { rows } = await client.query<{ role_id: number; n: number }>(
    'SELECT role_id, count(*)::int AS n FROM user_roles WHERE user_id = 11 GROUP BY role_id ORDER BY role_id',
  )
  t.same(rows, [
    { role_id: role.id, n: 1 },
    { role_id: other.id, n: 1 },
  ])
  const row = await rbac.getAssignment(11, role.id)
  t.ok(row !== null)
  t.ok(
    (row!.revoked_at === null && row!.revoked_by === null) ||
      (row!.revoked_at !== null && row!.revoked_by !== null),
    'the row is consistently active or revoked',
  )
  // concurrent first assignments of a fresh pair: both succeed, one row
  const both = await Promise.all([rbac.assignRole(12, role.id, 1), second.assignRole(12, role.id, 2)])
  t.equal(both[0].user_id, 12)
  t.equal(both[1].user_id, 12)
  t.same((await client.query('SELECT count(*)::int AS n FROM user_roles WHERE user_id = 12')).rows, [
    { n: 1 },
  ])
})

t.test('postgres: concurrent migrateRbac from two instances', async (t) => {
  const pgEngine = engines.find((e) => e.name === 'postgres')!
  const { client, extra } = await pgEngine.open(t)
  const others = await Promise.all([extra(), extra()])
  await Promise.all([client, ...others].map((c) => migrateRbac(c)))
  t.same(await appliedMigrations(client, 'rbac'), [1])
  const rbac = new RbacService(others[1]!)
  t.equal((await rbac.createPermission('a:b', '', 'a', 'b')).name, 'a:b')
})
