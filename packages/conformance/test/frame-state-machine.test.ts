// The frame protocol as a state machine, property-tested: random interleavings of REQUEST, CANCEL,
// SUBSCRIBE, UNSUBSCRIBE and PING on one connection, sent in batches (one write each), checked against
// a model of PROTOCOL.md "Frames": exactly one RESPONSE or ERROR per unary call, nothing after CANCEL,
// an id reusable at its answer or its CANCEL, a duplicate id refused while in flight, the in-flight cap,
// a stream answered by its items then one STREAM_END, a PONG for every PING; and closing the
// connection stops every handler.

import { FrameType } from '@trivium/wire'
import fc from 'fast-check'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { type Carriage, dec, json, type RawApp, RawClient, rawApp, sleep } from './raw-frames.ts'

const MAX_IN_FLIGHT = 4
const STREAM_ITEMS = 3

type Event =
  | { kind: 'echo' | 'hold' | 'stream'; id: number }
  | { kind: 'cancel'; id: number }
  | { kind: 'ping'; id: number }
  | { kind: 'subscribe' | 'unsubscribe'; id: number; topic: string }

const requestId = fc.integer({ min: 1, max: 6 })
const event: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constantFrom('echo' as const, 'hold' as const, 'stream' as const), id: requestId }),
  fc.record({ kind: fc.constant('cancel' as const), id: requestId }),
  fc.record({ kind: fc.constant('ping' as const), id: requestId }),
  fc.record({
    kind: fc.constantFrom('subscribe' as const, 'unsubscribe' as const),
    // Subscription ids have their own range: their RESPONSE is not a call's answer.
    id: fc.integer({ min: 1000, max: 1003 }),
    topic: fc.constantFrom('a', 'b'),
  }),
)
const batches = fc.array(fc.array(event, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 3 })

interface Expectation {
  /** Echo payload markers that must come back as a RESPONSE, by id. */
  responses: Array<{ id: number; marker: number }>
  /** ERRORs that must come, by id and message. */
  errors: Array<{ id: number; message: string }>
  /** Streams that must run to their end, by id. */
  streams: number[]
  pongs: number[]
  subscriptionAnswers: number[]
}

/** Runs the model over one batch; `held` (ids of live `hold` calls) carries over between batches. */
function expect(batch: Event[], held: Set<number>, base: number): Expectation {
  const out: Expectation = { responses: [], errors: [], streams: [], pongs: [], subscriptionAnswers: [] }
  const inFlight = new Map<number, { kind: string; marker: number }>()
  for (const id of held) inFlight.set(id, { kind: 'hold', marker: -1 })
  // Every admitted call of the batch still runs while the batch is read (answers come after it).
  let running = held.size
  batch.forEach((e, i) => {
    switch (e.kind) {
      case 'echo':
      case 'hold':
      case 'stream':
        if (inFlight.has(e.id))
          out.errors.push({ id: e.id, message: `Request id ${e.id} is already in flight` })
        else if (running >= MAX_IN_FLIGHT) {
          out.errors.push({
            id: e.id,
            message: `Too many requests in flight on this connection (limit ${MAX_IN_FLIGHT})`,
          })
        } else {
          inFlight.set(e.id, { kind: e.kind, marker: base + i })
          running++
        }
        return
      case 'cancel':
        inFlight.delete(e.id)
        return
      case 'ping':
        out.pongs.push(e.id)
        return
      default:
        out.subscriptionAnswers.push(e.id)
    }
  })
  held.clear()
  for (const [id, call] of inFlight) {
    if (call.kind === 'echo') out.responses.push({ id, marker: call.marker })
    else if (call.kind === 'stream') out.streams.push(id)
    else held.add(id)
  }
  return out
}

function frameOf(e: Event, marker: number) {
  const empty = new Uint8Array(0)
  switch (e.kind) {
    case 'echo':
      return { type: FrameType.REQUEST, requestId: e.id, endpoint: 'echo', payload: json({ marker }) }
    case 'hold':
      return { type: FrameType.REQUEST, requestId: e.id, endpoint: 'hold', payload: json({}) }
    case 'stream':
      return {
        type: FrameType.REQUEST,
        requestId: e.id,
        endpoint: 'count',
        payload: json({ n: STREAM_ITEMS }),
      }
    case 'cancel':
      return { type: FrameType.CANCEL, requestId: e.id, payload: empty }
    case 'ping':
      return { type: FrameType.PING, requestId: e.id, payload: empty }
    case 'subscribe':
      return { type: FrameType.SUBSCRIBE, requestId: e.id, topic: e.topic, payload: empty }
    default:
      return { type: FrameType.UNSUBSCRIBE, requestId: e.id, topic: e.topic, payload: empty }
  }
}

async function run(carriage: Carriage, server: RawApp & { holding: () => number }, plan: Event[][]) {
  const c = await RawClient.open(carriage, server)
  const held = new Set<number>()
  try {
    let base = 0
    for (const batch of plan) {
      c.frames.length = 0
      const want = expect(batch, held, base)
      c.write(...batch.map((e, i) => frameOf(e, base + i)))
      base += batch.length
      const done = (frames: typeof c.frames) =>
        want.responses.every((r) =>
          frames.some((f) => f.type === FrameType.RESPONSE && f.requestId === r.id && f.payload.length > 0),
        ) &&
        want.streams.every((id) =>
          frames.some((f) => f.type === FrameType.STREAM_END && f.requestId === id),
        ) &&
        frames.filter((f) => f.type === FrameType.ERROR).length >= want.errors.length &&
        frames.filter((f) => f.type === FrameType.PONG).length >= want.pongs.length &&
        // (a batch of only (un)subscribes waits for their answers too: at load 15 they took over 20 ms)
        want.subscriptionAnswers.every((id) =>
          frames.some((f) => f.type === FrameType.RESPONSE && f.requestId === id),
        )
      await c.until(done, 10_000)
      await sleep(20) // anything that must not come (after CANCEL) would come now
      const got = c.frames
      const responses = got
        .filter((f) => f.type === FrameType.RESPONSE && f.requestId < 1000)
        .map((f) => ({ id: f.requestId, marker: dec(f.payload).marker as number }))
      const sort = <T>(xs: T[]) => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
      if (JSON.stringify(sort(responses)) !== JSON.stringify(sort(want.responses))) {
        throw new Error(`responses ${JSON.stringify(responses)} ≠ ${JSON.stringify(want.responses)}`)
      }
      const errors = got
        .filter((f) => f.type === FrameType.ERROR)
        .map((f) => ({ id: f.requestId, message: dec(f.payload).message as string }))
      if (JSON.stringify(sort(errors)) !== JSON.stringify(sort(want.errors))) {
        throw new Error(`errors ${JSON.stringify(errors)} ≠ ${JSON.stringify(want.errors)}`)
      }
      for (const id of new Set([
        ...got.filter((f) => f.type === FrameType.STREAM_ITEM).map((f) => f.requestId),
        ...want.streams,
      ])) {
        const items = got.filter((f) => f.requestId === id && f.type === FrameType.STREAM_ITEM).length
        const ends = got.filter((f) => f.requestId === id && f.type === FrameType.STREAM_END).length
        if (!want.streams.includes(id) || items !== STREAM_ITEMS || ends !== 1) {
          throw new Error(
            `stream ${id}: ${items} items, ${ends} ends (expected: ${want.streams.includes(id)})`,
          )
        }
      }
      const pongs = got.filter((f) => f.type === FrameType.PONG).map((f) => f.requestId)
      if (JSON.stringify(sort(pongs)) !== JSON.stringify(sort(want.pongs))) throw new Error(`pongs ${pongs}`)
      const subs = got
        .filter((f) => f.type === FrameType.RESPONSE && f.requestId >= 1000)
        .map((f) => f.requestId)
      if (JSON.stringify(sort(subs)) !== JSON.stringify(sort(want.subscriptionAnswers))) {
        throw new Error(`subscription answers ${subs}`)
      }
    }
  } finally {
    c.close()
  }
  // Closing the connection aborts every call still held.
  const deadline = Date.now() + waitBound(10_000)
  while (server.holding() > 0 && Date.now() < deadline) await sleep(5)
  if (server.holding() !== 0) throw new Error(`${server.holding()} handlers still running after the close`)
}

for (const carriage of ['websocket', 'tcp-direct', 'tcp-inject'] as const) {
  t.test(`${carriage}: random frame interleavings follow PROTOCOL.md`, async (t) => {
    let holding = 0
    const base = await rawApp({
      ws: { maxInFlight: MAX_IN_FLIGHT },
      tcp: { maxInFlight: MAX_IN_FLIGHT, mode: carriage === 'tcp-inject' ? 'inject' : 'direct' },
      setup: (app) => {
        app.trivium.endpoint('hold', { method: 'POST', url: '/hold' }, async (_b, call) => {
          holding++
          try {
            await new Promise<void>((resolve) => call.signal.addEventListener('abort', () => resolve()))
            return {}
          } finally {
            holding--
          }
        })
        app.trivium.stream('count', { method: 'POST', url: '/count' }, async function* (body: { n: number }) {
          for (let i = 0; i < body.n; i++) yield { i }
        })
      },
    })
    t.teardown(() => base.app.close())
    const server = { ...base, holding: () => holding }
    await fc.assert(
      fc.asyncProperty(batches, (plan) => run(carriage, server, plan)),
      { numRuns: carriage === 'tcp-inject' ? 15 : 30, endOnFailure: true },
    )
    t.pass('every run matched the model')
  })
}
