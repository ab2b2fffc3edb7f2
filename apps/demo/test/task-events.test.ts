// The in-process `tasks.watch` bus (tasks/events.ts): each subscriber gets every event published after
// its first `next()`, in order, queued while it is busy; an abort or `return()` ends its iteration at
// once and leaves the bus; every subscriber receives the same frozen event object (encoded once per
// format by the frame transports).

import { ServiceUnavailableException } from '@trivium/core'
import t from 'tap'
import { LocalTaskEventBus, type TaskEventRecord } from '../src/tasks/events.js'

function event(id: number, kind: TaskEventRecord['kind'] = 'created'): TaskEventRecord {
  const at = new Date('2026-11-27T00:00:00Z')
  return {
    kind,
    at,
    task: {
      id,
      title: `t${id}`,
      done: false,
      tags: ['a'],
      ownerId: 1,
      createdAt: at,
      updatedAt: at,
      ownerName: 'u',
    },
  }
}

t.test('events after the first next() arrive in order, queued while the subscriber is busy', async (t) => {
  const bus = new LocalTaskEventBus()
  const stop = new AbortController()
  const it = bus.subscribe(stop.signal)[Symbol.asyncIterator]()
  await bus.publish(event(0)) // before the first next(): not subscribed yet
  const first = it.next()
  await bus.publish(event(1))
  await bus.publish(event(2, 'updated'))
  await bus.publish(event(3, 'deleted'))
  const seen = [await first, await it.next(), await it.next()].map((r) => [r.value.task.id, r.value.kind])
  t.same(seen, [
    [1, 'created'],
    [2, 'updated'],
    [3, 'deleted'],
  ])
  stop.abort()
  t.same(await it.next(), { done: true, value: undefined })
})

t.test('an abort ends a waiting next() and the subscriber gets nothing more', async (t) => {
  const bus = new LocalTaskEventBus()
  const stop = new AbortController()
  const other = new AbortController()
  const it = bus.subscribe(stop.signal)[Symbol.asyncIterator]()
  const kept = bus.subscribe(other.signal)[Symbol.asyncIterator]()
  const waiting = it.next()
  const keptNext = kept.next()
  stop.abort()
  t.same(await waiting, { done: true, value: undefined })
  await bus.publish(event(7))
  t.equal((await keptNext).value.task.id, 7, 'the other subscriber still receives')
  t.same(await it.next(), { done: true, value: undefined })
  other.abort()
})

t.test('a signal aborted before the first next() ends the iteration without subscribing', async (t) => {
  const bus = new LocalTaskEventBus()
  const it = bus.subscribe(AbortSignal.abort())[Symbol.asyncIterator]()
  t.same(await it.next(), { done: true, value: undefined })
})

t.test('return() (a for-await left early) ends the subscription', async (t) => {
  const bus = new LocalTaskEventBus()
  const stop = new AbortController()
  const got: number[] = []
  const loop = (async () => {
    for await (const e of bus.subscribe(stop.signal)) {
      got.push(e.task.id)
      if (got.length === 2) break
    }
  })()
  await new Promise((r) => setImmediate(r))
  for (let id = 1; id <= 3; id++) await bus.publish(event(id))
  await loop
  t.same(got, [1, 2])
})

t.test('every subscriber receives the same frozen event; close() ends them all', async (t) => {
  const bus = new LocalTaskEventBus()
  const stop = new AbortController()
  const a = bus.subscribe(stop.signal)[Symbol.asyncIterator]()
  const b = bus.subscribe(stop.signal)[Symbol.asyncIterator]()
  const [nextA, nextB] = [a.next(), b.next()]
  await bus.publish(event(5))
  const [ra, rb] = [await nextA, await nextB]
  t.equal(ra, rb, 'one iterator result for both waiting subscribers')
  t.ok(Object.isFrozen(ra))
  const [ea, eb] = [ra.value, rb.value]
  t.equal(ea, eb, 'one object for both')
  t.ok(Object.isFrozen(ea) && Object.isFrozen(ea.task) && Object.isFrozen(ea.task.tags))
  t.throws(() => {
    ;(ea.task as { title: string }).title = 'changed'
  }, TypeError)
  const pending = a.next()
  await bus.close()
  t.same(await pending, { done: true, value: undefined })
  t.same(await b.next(), { done: true, value: undefined })
})

t.test('a subscriber that falls maxPending events behind ends with a 503 and leaves the bus', async (t) => {
  const bus = new LocalTaskEventBus(3)
  const slow = new AbortController()
  const fast = new AbortController()
  const it = bus.subscribe(slow.signal)[Symbol.asyncIterator]()
  const other = bus.subscribe(fast.signal)[Symbol.asyncIterator]()
  const first = it.next() // subscribed, and taken at once: not counted as waiting
  const otherSeen: number[] = []
  let otherNext = other.next()
  for (let id = 1; id <= 5; id++) {
    await bus.publish(event(id))
    otherSeen.push((await otherNext).value.task.id)
    otherNext = other.next()
  }
  t.equal((await first).value.task.id, 1)
  // 2, 3, 4 waited (3 = maxPending); 5 found the queue full: the queue is dropped, the stream ends.
  const err = await it.next().then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof ServiceUnavailableException, 'a typed error')
  t.equal((err as ServiceUnavailableException).statusCode, 503)
  t.equal(
    (err as Error).message,
    'Event stream fell more than 3 events behind: watch again and reload what you show',
  )
  t.same(await it.next(), { done: true, value: undefined }, 'then the iteration is over')
  await bus.publish(event(6))
  t.same(await it.next(), { done: true, value: undefined }, 'and it receives nothing more')
  t.same(otherSeen, [1, 2, 3, 4, 5], 'a subscriber that keeps up is not affected')
  t.equal((await otherNext).value.task.id, 6)
  fast.abort()
  slow.abort()
})

t.test('a subscriber exactly maxPending behind keeps every event', async (t) => {
  const bus = new LocalTaskEventBus(3)
  const stop = new AbortController()
  const it = bus.subscribe(stop.signal)[Symbol.asyncIterator]()
  const first = it.next()
  for (let id = 1; id <= 4; id++) await bus.publish(event(id))
  const seen = [await first, await it.next(), await it.next(), await it.next()].map((r) => r.value.task.id)
  t.same(seen, [1, 2, 3, 4])
  stop.abort()
})
