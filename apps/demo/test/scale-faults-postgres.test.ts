// Issue 11, faults: PostgreSQL goes away under two instances (a TCP proxy in front of the shared server
// is cut) and comes back. Requests that need it get 503 with the common error body, nothing is written
// half-way, and service recovers without a restart.
import t from 'tap'
import {
  ADMIN,
  api,
  type Instance,
  login,
  newBackend,
  PgProxy,
  registerAndLogin,
  startInstances,
  until,
} from './scale-helpers.js'

const DB_DOWN = {
  statusCode: 503,
  code: 'TRV_SERVICE_UNAVAILABLE',
  error: 'ServiceUnavailableException',
  message: 'Database unavailable',
  requestId: String,
}

t.test('PostgreSQL outage under two instances', async (t) => {
  const proxy = await PgProxy.create()
  const backend = newBackend({ databaseUrl: proxy.url })
  const instances = (await startInstances(t, backend)) as [Instance, Instance]
  t.teardown(() => proxy.close())
  const [a, b] = instances

  const { user: dave, tokens } = await registerAndLogin(a.base, 'dave')
  const token = tokens.accessToken
  const admin = await login(b.base, ADMIN.username, ADMIN.password)
  const before = await api(a.base, 'POST', '/tasks', { token, body: { title: 'before the outage' } })
  t.equal(before.status, 201)

  proxy.cut()
  const down = performance.now()

  await t.test('requests that need the database: 503 with the common body', async (t) => {
    for (const i of instances) {
      const calls = {
        'tasks.list': () => api(i.base, 'GET', '/tasks?limit=5', { token }),
        'tasks.create': () =>
          api(i.base, 'POST', '/tasks', { token, body: { title: `during on ${i.name}` } }),
        'tasks.update': () =>
          api(i.base, 'PUT', `/tasks/${before.body.id}`, { token, body: { title: 'changed during' } }),
        'auth.login': () =>
          api(i.base, 'POST', '/auth/login', {
            body: { username: 'dave', password: 'Str0ng!Passw0rd' },
            headers: { 'x-forwarded-for': `10.200.0.${i.name === 'A' ? 1 : 2}` },
          }),
        'auth.register': () =>
          api(i.base, 'POST', '/auth/register', {
            body: {
              username: `erin${i.name}`,
              email: `erin${i.name}@example.com`,
              password: 'Str0ng!Passw0rd',
            },
            headers: { 'x-forwarded-for': `10.201.0.${i.name === 'A' ? 1 : 2}` },
          }),
        'admin.roles.assign (live RBAC)': () =>
          api(i.base, 'POST', '/admin/roles/assign', {
            token: admin.accessToken,
            body: { userId: dave.id, roleId: 1 },
          }),
      }
      for (const [name, call] of Object.entries(calls)) {
        const res = await call()
        t.equal(res.status, 503, `${name} on ${i.name}: 503`)
        t.match(res.body, DB_DOWN)
        t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8')
      }
      // What does not need the database keeps working.
      t.equal((await api(i.base, 'GET', '/health')).status, 200, `health on ${i.name}: 200`)
    }
    t.comment(`all 503s answered within ${(performance.now() - down).toFixed(0)} ms of the cut`)
  })

  await t.test('PostgreSQL returns: recovery without a restart, nothing half-written', async (t) => {
    proxy.restore()
    const back = performance.now()
    const recovered = await until(async () => {
      const replies = await Promise.all(
        instances.map((i) => api(i.base, 'GET', '/tasks?limit=100', { token })),
      )
      return replies.every((r) => r.status === 200)
    }, 10000)
    t.ok(recovered, 'both instances answer from the database again')
    t.comment(`recovered ${(performance.now() - back).toFixed(0)} ms after the proxy was restored`)

    const list = await api(b.base, 'GET', '/tasks?limit=100', { token })
    t.same(
      list.body.items.map((x: { title: string }) => x.title),
      ['before the outage'],
      'no task written during the outage, the old one unchanged',
    )
    // The registrations refused during the outage left no user behind: the names are free.
    for (const name of ['erinA', 'erinB']) {
      const res = await api(a.base, 'POST', '/auth/register', {
        body: { username: name, email: `${name}@example.com`, password: 'Str0ng!Passw0rd' },
        headers: { 'x-forwarded-for': `10.202.0.${name.at(-1) === 'A' ? 1 : 2}` },
      })
      t.equal(res.status, 201, `${name} can register now`)
      t.same(res.body.roles, ['member'])
    }
    // And writes work on both instances.
    for (const i of instances) {
      const res = await api(i.base, 'POST', '/tasks', { token, body: { title: `after on ${i.name}` } })
      t.equal(res.status, 201, `tasks.create on ${i.name}`)
    }
    const me = await login(b.base, 'dave')
    t.ok(me.accessToken, 'login works again')
  })
})
