// The server stream's pump (server-stream.ts): items go out in order and the end as STREAM_END; an
// abort ends it at once, also while the generator is stuck in an await, and the generator is returned;
// the shutdown's reason and a generator's error reject it; over the high-water mark it waits for the
// carrier's drain before it asks for the next item; a closed carrier stops it.

import type { EndpointDefinition } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import { FrameType } from '@trivium/wire'
import t from 'tap'
import type { FrameCarrier } from '../src/carrier.js'
import { pumpStream } from '../src/server-stream.js'

const definition = {
  response: { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v },
} as unknown as EndpointDefinition

interface Sent {
  type: number
  id: number
  body: string
}

function carrier(): FrameCarrier & {
  sent: Sent[]
  backlogBytes: number
  isOpen: boolean
  drains: (() => void)[]
} {
  const c = {
    sent: [] as Sent[],
    backlogBytes: 0,
    isOpen: true,
    drains: [] as (() => void)[],
    sendBody(type: number, id: number, body: Uint8Array | string) {
      c.sent.push({ type, id, body: Buffer.from(body as Uint8Array).toString() })
    },
    sendFrame() {},
    get backlog() {
      return c.backlogBytes
    },
    drain(signal: AbortSignal) {
      return new Promise<void>((resolve) => {
        c.drains.push(resolve)
        signal.addEventListener('abort', () => resolve(), { once: true })
      })
    },
    close() {},
    get open() {
      return c.isOpen
    },
  }
  return c
}

function pump(items: AsyncIterable<unknown>, c: FrameCarrier, signal: AbortSignal, shutdownError?: unknown) {
  return pumpStream({
    id: 7,
    definition,
    format: jsonFormat,
    items,
    signal,
    carrier: c,
    send: (type, id, body) => c.sendBody(type, id, body),
    highWaterMark: 100,
    shutdownError,
  })
}

/** An async iterator whose steps the test settles by hand, counting `return()` calls. */
function manual() {
  const waiting: ((r: IteratorResult<unknown>) => void)[] = []
  const failing: ((err: unknown) => void)[] = []
  const it = {
    asked: 0,
    returned: 0,
    next() {
      it.asked++
      return new Promise<IteratorResult<unknown>>((resolve, reject) => {
        waiting.push(resolve)
        failing.push(reject)
      })
    },
    async return() {
      it.returned++
      return { done: true as const, value: undefined }
    },
    [Symbol.asyncIterator]() {
      return it
    },
    give(value: unknown) {
      failing.shift()
      waiting.shift()?.({ done: false, value })
    },
    fail(err: unknown) {
      waiting.shift()
      failing.shift()?.(err)
    },
  }
  return it
}

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setImmediate(r))
}

t.test('items in order, then STREAM_END; the generator is returned', async (t) => {
  const c = carrier()
  let finished = false
  async function* items() {
    try {
      yield { n: 1 }
      yield { n: 2 }
    } finally {
      finished = true
    }
  }
  await pump(items(), c, new AbortController().signal)
  t.same(c.sent, [
    { type: FrameType.STREAM_ITEM, id: 7, body: '{"n":1}' },
    { type: FrameType.STREAM_ITEM, id: 7, body: '{"n":2}' },
    { type: FrameType.STREAM_END, id: 7, body: '' },
  ])
  t.ok(finished)
})

t.test('an abort ends the pump while the generator is stuck; a late item is dropped', async (t) => {
  const c = carrier()
  const it = manual()
  const stop = new AbortController()
  const done = pump(it, c, stop.signal)
  it.give({ n: 1 })
  await until(() => it.asked === 2)
  stop.abort(new Error('cancelled'))
  await done
  t.equal(it.returned, 1)
  it.give({ n: 2 })
  it.fail(new Error('late failure, ignored'))
  await new Promise((r) => setImmediate(r))
  t.same(
    c.sent.map((s) => s.body),
    ['{"n":1}'],
  )
})

t.test('a signal aborted at the start asks once and sends nothing', async (t) => {
  const c = carrier()
  const it = manual()
  await pump(it, c, AbortSignal.abort())
  t.equal(it.asked, 1)
  t.equal(it.returned, 1)
  t.same(c.sent, [])
  it.fail(new Error('rejected after the stop: handled'))
})

t.test("the shutdown's reason rejects the pump; another abort resolves it", async (t) => {
  const shutdown = new Error('shutting down')
  const stop = new AbortController()
  const it = manual()
  const done = pump(it, carrier(), stop.signal, shutdown)
  stop.abort(shutdown)
  await t.rejects(done, shutdown)
})

t.test("the generator's error rejects the pump and the generator is returned", async (t) => {
  const it = manual()
  const done = pump(it, carrier(), new AbortController().signal)
  const boom = new Error('boom')
  it.fail(boom)
  await t.rejects(done, boom)
  t.equal(it.returned, 1)
})

t.test('over the high-water mark the next item is asked for only after the drain', async (t) => {
  const c = carrier()
  const it = manual()
  const done = pump(it, c, new AbortController().signal)
  c.backlogBytes = 101
  it.give({ n: 1 })
  await until(() => c.drains.length === 1)
  await new Promise((r) => setImmediate(r))
  t.equal(it.asked, 1, 'waiting for the drain')
  c.backlogBytes = 0
  c.drains[0]?.()
  await until(() => it.asked === 2)
  it.give({ n: 2 })
  await until(() => it.asked === 3)
  c.isOpen = false
  it.give({ n: 3 })
  await done
  t.same(
    c.sent.map((s) => s.body),
    ['{"n":1}', '{"n":2}', '{"n":3}'],
  )
  t.equal(it.asked, 3, 'a closed carrier stops it')
  t.equal(it.returned, 1)
})
