// Issue 29 item 6: destructive and admin endpoints check the user's current rights, never the token's
// snapshot. An admin signs in, the admin role is revoked in the database behind the service's back (no
// endpoint, no cache invalidation: another instance or a DBA), and the same unexpired token can no longer
// delete a task, change another user's task or administer roles, on HTTP, WebSocket and TCP. The refusal
// arrives within the live cache's 5 s (polled with a deadline), not at the token's expiry an hour later.
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { registerAndLogin, startDemo } from './helpers.js'
import { failure, transportClients } from './transports.js'

const until = async (check: () => Promise<boolean>, ms: number): Promise<boolean> => {
  const deadline = Date.now() + waitBound(ms)
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return check()
}

t.test('a revoked admin role stops deletes and admin calls at once, with the same token', async (t) => {
  const demo = await startDemo(t, { rateLimitDefault: false })
  const { app, sql } = demo
  const alice = await registerAndLogin(app, 'alice')
  const boss = await registerAndLogin(app, 'boss')
  const adminRole = await app.rbac.getRoleByName('admin')
  await app.rbac.assignRole(boss.user.id, adminRole!.id)
  // A token issued while boss is an admin: its snapshot holds role admin and tasks:delete for an hour.
  const login = await app.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { username: 'boss', password: 'Str0ng!Passw0rd' },
  })
  const token = login.json().accessToken as string
  const bearer = { authorization: `Bearer ${token}` }
  const created = await app.inject({
    method: 'POST',
    url: '/tasks',
    headers: { authorization: `Bearer ${alice.tokens.accessToken}` },
    payload: { title: 'keep me' },
  })
  const taskId = created.json().id as number

  // While boss is an admin the token deletes (a task that is not there: 404 after the check passed).
  const probe = () => app.inject({ method: 'DELETE', url: '/tasks/999999', headers: bearer })
  t.equal((await probe()).statusCode, 404, 'an admin passes the rights check')

  await sql.query('UPDATE user_roles SET revoked_at = now() WHERE user_id = $1 AND role_id = $2', [
    boss.user.id,
    adminRole!.id,
  ])
  t.ok(
    await until(async () => (await probe()).statusCode === 403, 15_000),
    'refused once the live cache (5 s) has expired',
  )

  const clients = await transportClients(t, demo, token)
  const { port } = app.server.address() as { port: number }
  const res = await fetch(`http://127.0.0.1:${port}/tasks/${taskId}`, { method: 'DELETE', headers: bearer })
  t.equal(res.status, 403)
  const body = await res.json()
  t.same(body, {
    statusCode: 403,
    code: 'TRV_FORBIDDEN',
    error: 'ForbiddenException',
    message: 'Insufficient permissions. Required: tasks:delete',
    requestId: body.requestId,
  })
  const refused = { statusCode: 403, kind: 'ForbiddenException', details: undefined }
  for (const { name, client } of clients) {
    t.same(
      await failure(client.call('tasks.delete', { id: taskId })),
      { ...refused, message: 'Insufficient permissions. Required: tasks:delete' },
      `${name}: tasks.delete`,
    )
    t.same(
      await failure(client.call('tasks.update', { id: taskId, title: 'taken over' })),
      { ...refused, message: 'Only the owner of a task or an admin can change it' },
      `${name}: tasks.update of another user's task`,
    )
    t.same(
      await failure(client.call('admin.roles.assign', { userId: boss.user.id, roleId: adminRole!.id })),
      { ...refused, message: 'Insufficient roles. Required: admin' },
      `${name}: admin.roles.assign`,
    )
  }
  const still = await app.inject({
    url: `/tasks/${taskId}`,
    headers: { authorization: `Bearer ${alice.tokens.accessToken}` },
  })
  t.match(still.json(), { id: taskId, title: 'keep me' }, 'the task is still there, unchanged')
})
