// A write given a `stop` (the call) writes nothing when the stop fires before the write or while it runs
// (the last check before COMMIT): PROTOCOL.md "Deadlines" — never "answered 504, committed anyway".
import { TimeoutException } from '@trivium/core'
import { migrateRbac, RbacService, type WriteStop } from '@trivium/rbac'
import t from 'tap'
import { engines } from './helpers.ts'

/** A stop whose deadline passes at its `firesAt`-th check (1 = before the write, 2 = before COMMIT). */
function stopAt(firesAt: number): WriteStop & { checks: number } {
  return {
    checks: 0,
    throwIfAborted() {
      this.checks++
      if (this.checks >= firesAt) throw new TimeoutException('Deadline of 5 ms exceeded')
    },
  }
}

for (const engine of engines) {
  t.test(`${engine.name}: a stop that fires drops every admin write`, async (t) => {
    const { client } = await engine.open(t)
    await migrateRbac(client)
    const rbac = new RbacService(client)
    const read = await rbac.createPermission('tasks:read', 'Read tasks', 'tasks', 'read')
    const reader = await rbac.createRole('reader', 'Reads tasks', [read.id])

    for (const firesAt of [1, 2]) {
      const when = firesAt === 1 ? 'before the write' : 'before COMMIT'
      const stop = stopAt(firesAt)
      await t.rejects(
        rbac.createPermission(`p${firesAt}`, 'P', 'tasks', 'p', stop),
        { name: 'TimeoutException', message: 'Deadline of 5 ms exceeded' },
        `createPermission, ${when}`,
      )
      t.equal(stop.checks, firesAt)
      t.equal(await rbac.getPermissionByName(`p${firesAt}`), null, `no permission (${when})`)

      await t.rejects(rbac.createRole(`r${firesAt}`, 'R', [read.id], stopAt(firesAt)), {
        name: 'TimeoutException',
      })
      t.equal(await rbac.getRoleByName(`r${firesAt}`), null, `no role (${when})`)

      await t.rejects(rbac.assignRole(7, reader.id, 1, stopAt(firesAt)), { name: 'TimeoutException' })
      t.equal(await rbac.getAssignment(7, reader.id), null, `no assignment (${when})`)
    }

    // A revoke dropped before COMMIT leaves the assignment active.
    await rbac.assignRole(8, reader.id, 1)
    await t.rejects(rbac.revokeRole(8, reader.id, 1, stopAt(2)), { name: 'TimeoutException' })
    t.equal((await rbac.getAssignment(8, reader.id))?.revoked_at, null, 'still active')
    t.same(
      (await rbac.getUserRoles(8)).map((r) => r.name),
      ['reader'],
    )

    // A stop that never fires: each write runs and commits (checked twice: before and before COMMIT).
    const calm = stopAt(Number.POSITIVE_INFINITY)
    const written = await rbac.createPermission('p3', 'P', 'tasks', 'p3', calm)
    t.equal(calm.checks, 2)
    t.same(await rbac.getPermissionByName('p3'), written)
    t.match(await rbac.revokeRole(8, reader.id, 1, stopAt(Number.POSITIVE_INFINITY)), { user_id: 8 })
  })
}
