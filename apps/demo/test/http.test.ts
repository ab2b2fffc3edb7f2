import t from 'tap'
import { ADMIN, BACKENDS, backendConfig, registerAndLogin, startDemo } from './helpers.js'

for (const backend of BACKENDS)
  t.test(`Trivium Tasks over HTTP (${backend})`, async (t) => {
    const { app } = await startDemo(t, backendConfig(backend))
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

    await t.test('health is public, carries the security headers, and is never rate limited', async (t) => {
      const res = await app.inject('/health')
      t.equal(res.statusCode, 200)
      t.equal(res.json().status, 'ok')
      t.equal(res.headers['x-frame-options'], 'DENY')
      t.equal(res.headers['content-security-policy'], "default-src 'self'")
      t.equal(res.headers['x-ratelimit-limit'], undefined)
      const refresh = await app.inject({
        method: 'POST',
        url: '/auth/refresh',
        payload: { refreshToken: 'x' },
      })
      t.equal(refresh.headers['x-ratelimit-limit'], '100', 'the default limit elsewhere')
    })

    const alice = await registerAndLogin(app, 'alice')
    const bob = await registerAndLogin(app, 'bob')

    await t.test('register answers 201 with the member role; login gives a token pair', async (t) => {
      t.same(alice.user, {
        id: alice.user.id,
        username: 'alice',
        email: 'alice@example.com',
        roles: ['member'],
      })
      t.equal(alice.tokens.expiresIn, 3600)
      const me = await app.inject({ url: '/auth/me', headers: bearer(alice.tokens.accessToken) })
      t.same(me.json(), {
        id: alice.user.id,
        username: 'alice',
        email: 'alice@example.com',
        roles: ['member'],
      })
    })

    await t.test(
      'tasks: create 201, list, get, update by owner only, delete needs tasks:delete',
      async (t) => {
        const created = await app.inject({
          method: 'POST',
          url: '/tasks',
          headers: bearer(alice.tokens.accessToken),
          payload: { title: 'Write the demo', tags: ['demo'] },
        })
        t.equal(created.statusCode, 201)
        const task = created.json()
        t.match(task, { title: 'Write the demo', done: false, tags: ['demo'], ownerId: alice.user.id })
        t.match(task.createdAt, /^\d{4}-\d\d-\d\dT/)

        const list = await app.inject({
          url: '/tasks?tag=demo&limit=10',
          headers: bearer(bob.tokens.accessToken),
        })
        t.equal(list.statusCode, 200)
        t.same(
          list.json().items.map((x: { id: number }) => x.id),
          [task.id],
        )

        const get = await app.inject({ url: `/tasks/${task.id}`, headers: bearer(bob.tokens.accessToken) })
        t.equal(get.json().title, 'Write the demo')

        const bobEdit = await app.inject({
          method: 'PUT',
          url: `/tasks/${task.id}`,
          headers: bearer(bob.tokens.accessToken),
          payload: { done: true },
        })
        t.equal(bobEdit.statusCode, 403)
        t.equal(bobEdit.json().message, 'Only the owner of a task or an admin can change it')

        const aliceEdit = await app.inject({
          method: 'PUT',
          url: `/tasks/${task.id}`,
          headers: bearer(alice.tokens.accessToken),
          payload: { done: true },
        })
        t.equal(aliceEdit.json().done, true)

        const memberDelete = await app.inject({
          method: 'DELETE',
          url: `/tasks/${task.id}`,
          headers: bearer(alice.tokens.accessToken),
        })
        t.equal(memberDelete.statusCode, 403)
        t.equal(memberDelete.json().message, 'Insufficient permissions. Required: tasks:delete')

        const admin = await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })
        t.equal(admin.statusCode, 200)
        const adminDelete = await app.inject({
          method: 'DELETE',
          url: `/tasks/${task.id}`,
          headers: bearer(admin.json().accessToken),
        })
        t.same(adminDelete.json(), { ok: true })
        const gone = await app.inject({ url: `/tasks/${task.id}`, headers: bearer(bob.tokens.accessToken) })
        t.equal(gone.statusCode, 404)
        t.equal(gone.json().message, `Task ${task.id} not found`)
      },
    )

    await t.test('no token, bad token, and a revoked token after logout', async (t) => {
      const none = await app.inject('/tasks')
      t.same([none.statusCode, none.json().message], [401, 'Authentication required'])
      const bad = await app.inject({ url: '/tasks', headers: bearer('abc.def.ghi') })
      t.equal(bad.statusCode, 401)
      t.match(bad.json().message, /^Invalid token: /)
      const carol = await registerAndLogin(app, 'carol')
      const out = await app.inject({
        method: 'POST',
        url: '/auth/logout',
        headers: bearer(carol.tokens.accessToken),
        payload: { refreshToken: carol.tokens.refreshToken },
      })
      t.same(out.json(), { ok: true })
      const after = await app.inject({ url: '/tasks', headers: bearer(carol.tokens.accessToken) })
      t.same([after.statusCode, after.json().message], [401, 'Token has been revoked'])
    })

    await t.test('binary in and out with the generated models', async (t) => {
      const { CreateTask, Task } = await import('../dist/generated/index.js')
      const res = await app.inject({
        method: 'POST',
        url: '/tasks',
        headers: {
          ...bearer(alice.tokens.accessToken),
          'content-type': 'application/x-platform-binary',
          accept: 'application/x-platform-binary',
        },
        payload: Buffer.from(CreateTask.encode({ title: 'binary task', description: null, tags: ['b'] })),
      })
      t.equal(res.statusCode, 201)
      t.equal(res.headers['content-type'], 'application/x-platform-binary')
      const task = Task.decode(res.rawPayload)
      t.equal(task.title, 'binary task')
      t.same(task.tags, ['b'])
    })

    await t.test('files: the spec checks', async (t) => {
      const upload = (filename: string, data: Buffer) =>
        app.inject({
          method: 'POST',
          url: '/files',
          headers: bearer(alice.tokens.accessToken),
          payload: { filename, data: data.toString('base64') },
        })
      const ok = await upload('notes.pdf', Buffer.from('%PDF-1.4 hello'))
      t.equal(ok.statusCode, 201)
      t.match(ok.json(), { filename: 'notes.pdf', size: 14 })
      const exe = await upload('run.exe', Buffer.from('MZ'))
      t.same([exe.statusCode, exe.json().message], [400, 'File type not allowed'])
      const evil = await upload('x.png', Buffer.from('<script>alert(1)</script>'))
      t.same([evil.statusCode, evil.json().message], [400, 'File contains potentially malicious content'])
    })

    await t.test('admin endpoints need the admin role', async (t) => {
      const denied = await app.inject({
        method: 'POST',
        url: '/admin/permissions',
        headers: bearer(alice.tokens.accessToken),
        payload: { name: 'reports:read', description: 'Read reports', resource: 'reports', action: 'read' },
      })
      t.same([denied.statusCode, denied.json().message], [403, 'Insufficient roles. Required: admin'])
      const admin = (await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })).json()
      const created = await app.inject({
        method: 'POST',
        url: '/admin/permissions',
        headers: bearer(admin.accessToken),
        payload: { name: 'reports:read', description: 'Read reports', resource: 'reports', action: 'read' },
      })
      t.equal(created.statusCode, 201)
      t.match(created.json(), { name: 'reports:read', resource: 'reports', action: 'read' })
    })

    await t.test('login is limited to 5 per minute per client', async (t) => {
      // Sent at once: the limiter counts all six within milliseconds, whatever each refused login then
      // costs (a password hash; one after the other they could outlast the minute on a loaded machine).
      const answers = await Promise.all(
        Array.from({ length: 6 }, () =>
          app.inject({
            method: 'POST',
            url: '/auth/login',
            payload: { username: 'nobody', password: 'x' },
            remoteAddress: '10.9.9.9',
          }),
        ),
      )
      t.same(answers.map((res) => res.statusCode).sort(), [401, 401, 401, 401, 401, 429])
      const limited = answers.find((res) => res.statusCode === 429)
      t.match(limited?.json().message, /^Rate limit exceeded\. Try again in \d+ seconds$/)
    })

    await t.test('OpenAPI and docs are served', async (t) => {
      const doc = await app.inject('/openapi.json')
      t.equal(doc.statusCode, 200)
      t.ok(doc.json().paths['/tasks/{id}'])
      const docs = await app.inject('/docs')
      t.match(docs.headers['content-type'], /text\/html/)
    })
  })
