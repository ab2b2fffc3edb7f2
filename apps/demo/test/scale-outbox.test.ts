// Issue 30 item 5: a write that committed is answered as a success, and its event is delivered once
// Redis is back (the outbox). A private redis-server is frozen (SIGSTOP) while two instances create
// tasks without pause: every answer is 201 or a documented 503, every 201 task is stored, nothing of a
// 503 is, and every 201 task's event reaches the watchers of both instances exactly once after SIGCONT.
import t from 'tap'
import {
  ADMIN,
  api,
  type Instance,
  login,
  newBackend,
  openSse,
  POSTGRES_URL,
  PrivateRedis,
  registerAndLogin,
  startInstances,
  until,
} from './scale-helpers.js'

/** Keeps a fault in place for 3 s (twice the longest Redis timeout it must outlast) and until `worked()`. */
async function frozenFor(worked: () => boolean): Promise<void> {
  const since = Date.now()
  const done = await until(async () => Date.now() - since >= 3000 && worked(), 60_000)
  if (!done) throw new Error('the instances answered too little while Redis was frozen')
}

t.test('tasks.create while Redis is frozen: 201 or 503, never 500; events after the thaw', async (t) => {
  const redis = await PrivateRedis.create()
  t.teardown(() => redis.close())
  const backend = newBackend({ redisUrl: redis.url })
  const instances = (await startInstances(t, backend, 2, { RATE_LIMIT_DEFAULT: 'off' })) as [
    Instance,
    Instance,
  ]
  const { user, tokens } = await registerAndLogin(instances[0].base, 'olive')
  const token = tokens.accessToken
  const watchers = instances.map((i) => openSse(i.base, '/tasks/watch', token))
  t.teardown(() => Promise.all(watchers.map((w) => w.close())))
  // The watchers are subscribed once an event created now reaches both.
  const probe = await api(instances[0].base, 'POST', '/tasks', { token, body: { title: 'probe' } })
  t.equal(probe.status, 201)
  const createdEvents = (w: (typeof watchers)[number], id: number) =>
    w.events.filter((e) => e.data?.kind === 'created' && e.data.task?.id === id).length
  t.ok(
    await until(async () => watchers.every((w) => createdEvents(w, probe.body.id) === 1), 10_000),
    'both watchers receive events before the stall',
  )

  const answers: { title: string; status: number; body: any }[] = []
  let running = true
  let n = 0
  const loop = async (instance: Instance) => {
    while (running) {
      const title = `stall ${instance.name} ${n++}`
      const res = await api(instance.base, 'POST', '/tasks', { token, body: { title } }).catch((err) => ({
        status: 0,
        body: String(err),
        headers: new Headers(),
      }))
      answers.push({ title, status: res.status, body: res.body })
    }
  }
  const loops = [loop(instances[0]), loop(instances[0]), loop(instances[1]), loop(instances[1])]
  await until(async () => answers.length >= 20, 10_000)
  redis.proc?.kill('SIGSTOP')
  const frozenAt = answers.length
  // The fault lasts long enough for publishes to time out (500 ms) and for the revocation mirror to be
  // distrusted (1 s without a heartbeat), and until the instances have answered 40 creates while frozen.
  // (Not a wait for 503s: with the outbox a create commits and answers 201; a 503 is allowed, not required.)
  await frozenFor(() => answers.length - frozenAt >= 40)
  redis.proc?.kill('SIGCONT')
  const thawedAt = answers.length
  await until(async () => answers.slice(thawedAt).filter((a) => a.status === 201).length >= 10, 20_000)
  running = false
  await Promise.all(loops)

  const statuses = new Map<number, number>()
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
  t.same(
    [...statuses.keys()].filter((s) => s !== 201 && s !== 503),
    [],
    `every answer is 201 or 503 (${JSON.stringify([...statuses])})`,
  )
  t.ok(
    answers.slice(frozenAt, thawedAt).some((a) => a.status === 201),
    'some creates succeeded while frozen',
  )
  for (const a of answers.filter((x) => x.status === 503)) {
    t.match(a.body, {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: String,
      requestId: String,
    })
  }

  const { default: pg } = await import('pg')
  const db = new pg.Client({ connectionString: POSTGRES_URL })
  await db.connect()
  t.teardown(() => db.end())
  const stored = new Map<string, number>()
  for (const row of (await db.query(`SELECT id, title FROM "${backend.schema}".demo_tasks`)).rows)
    stored.set(row.title, row.id)
  const created = answers.filter((a) => a.status === 201)
  t.same(
    created.filter((a) => stored.get(a.title) !== a.body.id).map((a) => a.title),
    [],
    `every 201 task is stored (${created.length})`,
  )
  t.same(
    answers.filter((a) => a.status === 503 && stored.has(a.title)).map((a) => a.title),
    [],
    'no 503 stored anything',
  )
  const delivered = await until(
    async () => watchers.every((w) => created.every((a) => createdEvents(w, a.body.id) >= 1)),
    30_000,
    100,
  )
  t.ok(delivered, "every 201 task's event reached the watchers of both instances after the thaw")
  t.same(
    watchers.map((w) => created.filter((a) => createdEvents(w, a.body.id) !== 1).length),
    [0, 0],
    'each exactly once',
  )
  t.same(
    (await db.query(`SELECT count(*)::int AS n FROM "${backend.schema}".demo_outbox`)).rows[0].n,
    0,
    'the outbox is empty once relayed',
  )

  // A row left by an instance that died, and the relay lease it held (passed), are taken over.
  await db.query(
    `UPDATE "${backend.schema}".demo_outbox_relay SET holder = 'a dead instance', lease_until = now() - interval '1 second'`,
  )
  const orphan = {
    kind: 'created',
    at: new Date().toISOString(),
    task: {
      id: 2_000_000_000,
      title: 'left behind',
      description: null,
      done: false,
      tags: [],
      ownerId: user.id,
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    },
  }
  await db.query(`INSERT INTO "${backend.schema}".demo_outbox (event) VALUES ($1)`, [JSON.stringify(orphan)])
  t.ok(
    await until(async () => watchers.every((w) => createdEvents(w, orphan.task.id) === 1), 15_000, 100),
    "an orphaned row is delivered once the dead holder's relay lease passed",
  )

  // Idempotency keys are kept in the database: they hold across instances, concurrent duplicates too.
  const keyed = (i: Instance, title: string, key: string) =>
    api(i.base, 'POST', '/tasks', { token, body: { title }, headers: { 'idempotency-key': key } })
  const onA = await keyed(instances[0], 'keyed across', 'across-1')
  const onB = await keyed(instances[1], 'keyed across', 'across-1')
  t.same([onA.status, onB.status, onB.headers.get('idempotent-replayed')], [201, 201, 'true'])
  t.same(onB.body, onA.body, 'B answers what A answered')
  const racing = await Promise.all(
    [0, 1, 0, 1, 0, 1].map((n) => keyed(instances[n] as Instance, 'keyed race', 'across-2')),
  )
  t.same(
    racing.filter((r) => r.status !== 201 && r.status !== 409).map((r) => r.status),
    [],
    'concurrent duplicates on two instances: 201 (the first answer) or 409',
  )
  t.equal(
    (
      await db.query(
        `SELECT count(*)::int AS n FROM "${backend.schema}".demo_tasks WHERE title = 'keyed race'`,
      )
    ).rows[0].n,
    1,
    'one row',
  )

  // Role changes announce themselves to the other instances' live RBAC caches: through the outbox too.
  const admin = await login(instances[0].base, ADMIN.username, ADMIN.password)
  const adminRoleId = (await db.query(`SELECT id FROM "${backend.schema}".roles WHERE name = 'admin'`))
    .rows[0].id
  const changes: { op: string; status: number; body: any }[] = []
  let changing = true
  const changeLoop = (async () => {
    for (let i = 0; changing; i++) {
      const op = i % 2 === 0 ? 'assign' : 'revoke'
      const res = await api(instances[0].base, 'POST', `/admin/roles/${op}`, {
        token: admin.accessToken,
        body: { userId: user.id, roleId: adminRoleId },
      })
      changes.push({ op, status: res.status, body: res.body })
    }
  })()
  await until(async () => changes.length >= 4, 10_000)
  redis.proc?.kill('SIGSTOP')
  const frozenChanges = changes.length
  await frozenFor(() => changes.length - frozenChanges >= 8)
  redis.proc?.kill('SIGCONT')
  const thawedChanges = changes.length
  await until(async () => changes.slice(thawedChanges).filter((c) => c.status === 200).length >= 2, 20_000)
  changing = false
  await changeLoop
  t.same(
    changes.filter((c) => c.status !== 200 && c.status !== 503),
    [],
    `role changes: every answer is 200 or 503 (${changes.length})`,
  )
  t.ok(
    changes.slice(frozenChanges, thawedChanges).some((c) => c.status === 200),
    'some role changes succeeded while frozen',
  )
  t.ok(
    await until(
      async () =>
        (await db.query(`SELECT count(*)::int AS n FROM "${backend.schema}".demo_outbox`)).rows[0].n === 0,
      30_000,
      100,
    ),
    'their announcements left the outbox once Redis was back',
  )
  for (const i of instances)
    t.notMatch(i.output(), /Internal server error|"level":50/, `${i.name} logged no unhandled error`)
})
