// Issue 30.2: a logout ends the token's HTTP event streams (SSE `tasks.watch`) as it closes its
// WebSocket/TCP sessions, on the revoking instance and on the others: the `error` event with the 401
// body, then the end of the response. One mechanism: the streams are sessions of the push hub.
import t from 'tap'
import {
  api,
  type Instance,
  login,
  newBackend,
  openSse,
  register,
  startInstances,
  until,
} from './scale-helpers.js'

const REVOKED = {
  statusCode: 401,
  code: 'TRV_UNAUTHORIZED',
  error: 'UnauthorizedException',
  message: 'Token has been revoked',
}

t.test('a logout on A ends the SSE streams of the token on A and on B', async (t) => {
  const backend = newBackend()
  const [a, b] = (await startInstances(t, backend)) as [Instance, Instance]
  await register(a.base, 'watcher')
  const { accessToken: token } = await login(a.base, 'watcher')
  const { accessToken: other } = await login(a.base, 'watcher')
  const onA = openSse(a.base, '/tasks/watch', token)
  const onB = openSse(b.base, '/tasks/watch', token)
  const untouched = openSse(b.base, '/tasks/watch', other)
  t.teardown(() => Promise.all([onA.close(), onB.close(), untouched.close()]))

  // The streams are live once a created task reaches all three (a handler subscribes when its stream
  // starts, so a task is created on every poll until each has seen one).
  const live = await until(
    async () => {
      t.equal((await api(a.base, 'POST', '/tasks', { token, body: { title: 'seen' } })).status, 201)
      return [onA, onB, untouched].every((s) => s.events.some((e) => e.event === 'item'))
    },
    20_000,
    100,
  )
  t.ok(live, 'the streams deliver events')

  const out = await api(a.base, 'POST', '/auth/logout', { token, body: {} })
  t.same(out.body, { ok: true })
  for (const [name, stream] of [
    ['A (the revoking instance)', onA],
    ['B', onB],
  ] as const) {
    t.ok(await until(async () => stream.ended, 10_000), `the stream on ${name} ended`)
    const last = stream.events.at(-1)
    t.equal(last?.event, 'error', `the stream on ${name} ends with the error event`)
    t.match(last?.data, REVOKED)
    t.notOk(
      stream.events.some((e) => e.event === 'end'),
      `no normal end on ${name}`,
    )
  }

  // Another token of the same user keeps its stream.
  const before = untouched.events.length
  t.equal((await api(a.base, 'POST', '/tasks', { token: other, body: { title: 'after' } })).status, 201)
  t.ok(
    await until(async () => untouched.events.slice(before).some((e) => e.event === 'item'), 20_000),
    'a stream of another token still delivers',
  )
  t.notOk(untouched.ended)
})
