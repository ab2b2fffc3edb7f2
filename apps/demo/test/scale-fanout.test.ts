// Issue 11: `tasks.watch` events produced on instance A reach subscribers connected to instance B
// (Redis pub/sub), in order, nothing duplicated — over SSE (HTTP) and over WebSocket frames.
import { once } from 'node:events'
import { encodeWsFrame, FrameType } from '@trivium/wire'
import t from 'tap'
import {
  api,
  type Instance,
  newBackend,
  openSse,
  registerAndLogin,
  startInstances,
  until,
  WebSocket,
} from './scale-helpers.js'

interface Event {
  kind: string
  task: { id: number; title: string }
}

t.test('tasks.watch on B receives the events of tasks created on A', async (t) => {
  const backend = newBackend()
  const [a, b] = (await startInstances(t, backend)) as [Instance, Instance]
  const { tokens } = await registerAndLogin(a.base, 'watcher')
  const token = tokens.accessToken

  // Subscriber 1: SSE on B. Subscriber 2: a WebSocket stream on B. Subscriber 3: SSE on A (same order).
  const sseB = openSse(b.base, '/tasks/watch', token)
  const sseA = openSse(a.base, '/tasks/watch', token)
  const ws = new WebSocket(`ws://127.0.0.1:${b.http}/ws?token=${token}&format=json`)
  await once(ws, 'open')
  const wsEvents: Event[] = []
  ws.on('message', (data: Buffer) => {
    if (data[0] === FrameType.STREAM_ITEM) wsEvents.push(JSON.parse(data.subarray(5).toString()))
  })
  ws.send(
    encodeWsFrame({
      type: FrameType.REQUEST,
      requestId: 1,
      endpoint: 'tasks.watch',
      payload: Buffer.from('{}'),
    }),
  )
  t.teardown(async () => {
    ws.terminate()
    await sseA.close()
    await sseB.close()
  })

  const items = (sse: typeof sseB) => sse.events.filter((e) => e.event === 'item').map((e) => e.data as Event)
  const all = () => [items(sseB), items(sseA), wsEvents]
  // Probe tasks on A until every subscriber has seen one (they are then subscribed), then a marker
  // that all of them must see; what follows the marker is compared.
  const live = await until(
    async () => {
      if (all().every((list) => list.length > 0)) return true
      await api(a.base, 'POST', '/tasks', { token, body: { title: 'probe' } })
      return false
    },
    10000,
    200,
  )
  t.ok(live, 'three subscribers are live')
  const res = await sseB.response
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/event-stream/)
  const marker = (await api(a.base, 'POST', '/tasks', { token, body: { title: 'marker' } })).body
  t.ok(
    await until(async () => all().every((list) => list.some((e) => e.task.id === marker.id)), 10000),
    'the marker reached every subscriber',
  )
  const skip = (list: Event[]) => list.slice(list.findIndex((e) => e.task.id === marker.id) + 1)

  // 20 tasks created one after the other on A, then 20 more fired at once on A.
  const sequential: number[] = []
  for (let i = 0; i < 20; i++) {
    const res = await api(a.base, 'POST', '/tasks', { token, body: { title: `seq ${i}` } })
    t.equal(res.status, 201)
    sequential.push(res.body.id)
  }
  const burst = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      api(a.base, 'POST', '/tasks', { token, body: { title: `burst ${i}` } }),
    ),
  )
  t.same(
    burst.map((r) => r.status),
    Array(20).fill(201),
  )
  const burstIds = burst.map((r) => r.body.id as number)

  const done = await until(
    async () => [items(sseB), items(sseA), wsEvents].every((l) => skip(l).length >= 40),
    10000,
  )
  t.ok(done, '40 events reached every subscriber')
  // An end marker: events reach the bus in one order (PROTOCOL.md "Writes and their events"), so anything
  // repeated among the 40 would arrive before it.
  const end = (await api(a.base, 'POST', '/tasks', { token, body: { title: 'end marker' } })).body
  t.ok(
    await until(async () => all().every((list) => list.some((e) => e.task.id === end.id)), 10000),
    'the end marker reached every subscriber',
  )
  const upToEnd = (list: Event[]) => {
    const after = skip(list)
    return after.slice(
      0,
      after.findIndex((e) => e.task.id === end.id),
    )
  }
  const onB = upToEnd(items(sseB))
  const onBws = upToEnd(wsEvents)
  const onA = upToEnd(items(sseA))
  t.equal(onB.length, 40, 'SSE on B: nothing duplicated, nothing lost')
  t.equal(onBws.length, 40, 'WebSocket on B: nothing duplicated, nothing lost')
  t.ok(
    onB.every((e) => e.kind === 'created'),
    'created events',
  )
  t.same(
    onB.slice(0, 20).map((e) => e.task.id),
    sequential,
    'the sequential tasks arrive on B in creation order',
  )
  t.same(
    onB
      .slice(20)
      .map((e) => e.task.id)
      .sort((x, y) => x - y),
    [...burstIds].sort((x, y) => x - y),
    'each burst task arrives once',
  )
  const ids = (list: Event[]) => list.map((e) => e.task.id)
  t.same(ids(onBws), ids(onB), 'the WebSocket stream on B sees the same order')
  t.same(ids(onA), ids(onB), 'instance A sees the same order as B (one order per publisher)')
  t.equal(new Set(ids(onB)).size, 40, 'no id twice')
  t.same(onB[0]!.task.title, 'seq 0')
})
