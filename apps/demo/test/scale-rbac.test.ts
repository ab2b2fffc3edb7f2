// Issue 11: a role assigned or revoked on instance A is seen by B's live checks (admin.* endpoints are
// `liveRbac: true`) within the live cache TTL (5 s); the rights announcement over Redis makes it at once.

import pg from 'pg'
import t from 'tap'
import {
  ADMIN,
  api,
  type Instance,
  login,
  newBackend,
  POSTGRES_URL,
  registerAndLogin,
  startInstances,
} from './scale-helpers.js'

const TTL_MS = 5000
/** What a machine at load 15 may add to a promised delay (HTTP round trips to busy processes). */
const LOAD_MARGIN_MS = 3000
const DENIED = 'Insufficient roles. Required: admin'

t.test('role changes on A reach the live checks of B', async (t) => {
  const backend = newBackend()
  const [a, b] = (await startInstances(t, backend)) as [Instance, Instance]
  const alice = await registerAndLogin(a.base, 'alice')
  const admin = await login(a.base, ADMIN.username, ADMIN.password)
  const db = new pg.Client({ connectionString: POSTGRES_URL })
  await db.connect()
  const adminRoleId = (await db.query(`SELECT id FROM "${backend.schema}".roles WHERE name = 'admin'`))
    .rows[0].id
  t.teardown(() => db.end())

  let n = 0
  // alice's token still says `member`: only a live check can let her through.
  const aliceOnB = () =>
    api(b.base, 'POST', '/admin/roles', {
      token: alice.tokens.accessToken,
      body: { name: `role-${++n}`, description: 'made by alice', permissionIds: [] },
    })
  const first = await aliceOnB()
  t.same([first.status, first.body.message], [403, DENIED], 'B denies alice (and caches her live rights)')

  /** Polls B every 50 ms until `want`; returns the delay from `since` in ms, or -1. */
  async function seenOnB(want: number, since: number): Promise<number> {
    const end = since + TTL_MS + LOAD_MARGIN_MS + 2000
    while (performance.now() < end) {
      const res = await aliceOnB()
      if (res.status === want) return performance.now() - since
      if (res.status !== (want === 201 ? 403 : 201))
        t.fail(`unexpected ${res.status}: ${JSON.stringify(res.body)}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    return -1
  }

  const assign = await api(a.base, 'POST', '/admin/roles/assign', {
    token: admin.accessToken,
    body: { userId: alice.user.id, roleId: adminRoleId },
  })
  const assigned = performance.now()
  t.same(assign.body, { ok: true })
  const assignDelay = await seenOnB(201, assigned)
  t.comment(`role assigned on A → B's live check allows: ${assignDelay.toFixed(1)} ms (TTL ${TTL_MS} ms)`)
  t.ok(assignDelay >= 0 && assignDelay <= TTL_MS + LOAD_MARGIN_MS, 'within the live cache TTL')

  const revoke = await api(a.base, 'POST', '/admin/roles/revoke', {
    token: admin.accessToken,
    body: { userId: alice.user.id, roleId: adminRoleId },
  })
  const revoked = performance.now()
  t.same(revoke.body, { ok: true })
  const revokeDelay = await seenOnB(403, revoked)
  t.comment(`role revoked on A → B's live check denies: ${revokeDelay.toFixed(1)} ms`)
  t.ok(revokeDelay >= 0 && revokeDelay <= TTL_MS + LOAD_MARGIN_MS, 'within the live cache TTL')
  const last = await aliceOnB()
  t.same([last.status, last.body.message], [403, DENIED])

  // Without the announcement (a change made straight in the database), the TTL alone bounds the delay.
  await db.query(
    `UPDATE "${backend.schema}".user_roles SET revoked_at = NULL WHERE user_id = $1 AND role_id = $2`,
    [alice.user.id, adminRoleId],
  )
  const direct = performance.now()
  const directDelay = await seenOnB(201, direct)
  t.comment(`role given in the database (no announcement) → B allows after ${directDelay.toFixed(0)} ms`)
  t.ok(directDelay >= 0 && directDelay <= TTL_MS + LOAD_MARGIN_MS, 'within the live cache TTL')
  await db.query(
    `UPDATE "${backend.schema}".user_roles SET revoked_at = now() WHERE user_id = $1 AND role_id = $2`,
    [alice.user.id, adminRoleId],
  )

  // The token snapshot is not what decides: a fresh login on B says `admin` only while she has it.
  const again = await login(b.base, 'alice')
  const me = await api(b.base, 'GET', '/auth/me', { token: again.accessToken })
  t.same(me.body.roles, ['member'])
})
