// tasks.import (a client stream) and tasks.sync (a bidirectional stream) over WebSocket and TCP, both
// formats (PROTOCOL.md "Client and bidirectional streams"); HTTP/1.1 refuses both with the documented error.
import t from 'tap'
import { createTypedClient } from '../dist/generated/endpoints.js'
import { registerAndLogin, startDemo } from './helpers.js'
import { transportClients } from './transports.js'

t.test('tasks.import and tasks.sync', async (t) => {
  const demo = await startDemo(t)
  const { app } = demo
  const alice = await registerAndLogin(app, 'alice')
  const bob = await registerAndLogin(app, 'bob')
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const clients = (await transportClients(t, demo, alice.tokens.accessToken)).filter(
    (c) => c.client.transport !== 'http',
  )

  await t.test('over HTTP/1.1 both are refused with the documented error', async (t) => {
    for (const url of ['/tasks/import', '/tasks/sync']) {
      const res = await app.inject({
        method: 'POST',
        url,
        headers: bearer(alice.tokens.accessToken),
        payload: { title: 'x' },
      })
      t.equal(res.statusCode, 400)
      t.match(res.json(), {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        error: 'ValidationException',
        message: `Endpoint tasks.${url.slice(7)} takes a stream of requests: call it over WebSocket or TCP`,
      })
    }
  })

  for (const { name, client } of clients) {
    await t.test(`${name}: tasks.import creates each task, reports the refused ones`, async (t) => {
      const typed = createTypedClient(client)
      const started = typed.tasks.import()
      const items = [
        { title: `${name} one`, tags: ['import'] },
        { title: '   ' },
        { title: `${name} two`, description: 'second' },
        { title: 'with \u0000 NUL' },
      ]
      t.equal(await started.sendAll(items), true)
      const summary = (await started.response).toJSON() as {
        created: number
        failed: number
        taskIds: number[]
        errors: { index: number; message: string }[]
      }
      t.equal(summary.created, 2)
      t.equal(summary.failed, 2)
      t.same(summary.errors, [
        { index: 1, message: 'Invalid CreateTask: title must not be empty' },
        { index: 3, message: 'Invalid CreateTask: title must not contain the NUL character (U+0000)' },
      ])
      const stored = await Promise.all(summary.taskIds.map((id) => typed.tasks.get({ id })))
      t.same(
        stored.map((task) => [task.title, task.ownerId, [...task.tags]]),
        [
          [`${name} one`, alice.user.id, ['import']],
          [`${name} two`, alice.user.id, []],
        ],
      )
    })

    await t.test(`${name}: tasks.sync confirms edits and passes on other clients' changes`, async (t) => {
      const typed = createTypedClient(client)
      const mine = await typed.tasks.create({ title: `${name} mine` })
      const created = await app.inject({
        method: 'POST',
        url: '/tasks',
        headers: bearer(bob.tokens.accessToken),
        payload: { title: `${name} bob's` },
      })
      const bobs = created.json() as { id: number }
      const sync = typed.tasks.sync()
      const changes = sync[Symbol.asyncIterator]()
      await sync.send({ ref: 1, id: mine.id, done: true })
      const confirmed = (await changes.next()).value?.toJSON() as Record<string, any>
      t.match(confirmed, { source: 'you', ref: 1, kind: 'updated', task: { id: mine.id, done: true } })
      await sync.send({ ref: 2, id: bobs.id, title: 'not mine' })
      t.match((await changes.next()).value?.toJSON(), {
        source: 'you',
        ref: 2,
        kind: 'rejected',
        error: { code: 'TRV_FORBIDDEN', message: 'Only the owner of a task or an admin can change it' },
      })
      // Bob changes his task elsewhere: it comes out as another client's change. Events go out in the
      // order they were stored, so the event of alice's own edit (earlier) would have come before it.
      await app.inject({
        method: 'PUT',
        url: `/tasks/${bobs.id}`,
        headers: bearer(bob.tokens.accessToken),
        payload: { done: true },
      })
      const other = (await changes.next()).value?.toJSON() as Record<string, any>
      t.match(other, { source: 'other', kind: 'updated', task: { id: bobs.id, done: true } })
      await sync.end()
      t.same(await changes.next(), { done: true, value: undefined }, 'the stream ends after the half-close')
    })
  }
})
