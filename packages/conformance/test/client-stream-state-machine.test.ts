// Client streams as a state machine, property-tested (PROTOCOL.md "Client and bidirectional streams"):
// random interleavings of REQUEST (opening a `sum` stream), CLIENT_ITEM, CLIENT_END and CANCEL over a few
// request ids, sent in batches (one write each), checked against a model: a CREDIT for every stream opened,
// one RESPONSE with the sum of its items at its CLIENT_END, nothing after CANCEL, `No client stream <id> is
// open on this connection` for an item or a half-close on an id with no open stream, a duplicate REQUEST
// refused while the stream is open. Within a batch, nothing follows an id's CLIENT_END or CANCEL (what
// follows them in the same write is the half-closed case, tested byte by byte elsewhere).

import { FrameType } from '@trivium/wire'
import fc from 'fast-check'
import t from 'tap'
import { type Carriage, dec, json, RawClient, rawApp, sleep } from './raw-frames.ts'

type Event = { kind: 'open' | 'end' | 'cancel'; id: number } | { kind: 'item'; id: number; value: number }

const id = fc.integer({ min: 1, max: 4 })
const event: fc.Arbitrary<Event> = fc.oneof(
  fc.record({ kind: fc.constantFrom('open' as const, 'end' as const, 'cancel' as const), id }),
  fc.record({ kind: fc.constant('item' as const), id, value: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ kind: fc.constant('item' as const), id, value: fc.integer({ min: 0, max: 9 }) }),
)
const batches = fc.array(fc.array(event, { minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 4 })

interface Want {
  credits: number[]
  responses: Array<{ id: number; sum: number; count: number }>
  errors: Array<{ id: number; message: string }>
}

/** The model over one batch; `open` (sum and count of each open stream) carries over between batches. */
function model(batch: Event[], open: Map<number, { sum: number; count: number }>): [Event[], Want] {
  const want: Want = { credits: [], responses: [], errors: [] }
  const sent: Event[] = []
  const finished = new Set<number>()
  const noStream = (id: number) => ({ id, message: `No client stream ${id} is open on this connection` })
  for (const e of batch) {
    if (finished.has(e.id)) continue // nothing follows an id's end or cancel within one write
    sent.push(e)
    const stream = open.get(e.id)
    switch (e.kind) {
      case 'open':
        if (stream) want.errors.push({ id: e.id, message: `Request id ${e.id} is already in flight` })
        else {
          open.set(e.id, { sum: 0, count: 0 })
          want.credits.push(e.id)
        }
        break
      case 'item':
        if (!stream) want.errors.push(noStream(e.id))
        else {
          stream.sum += e.value
          stream.count++
        }
        break
      case 'end':
        if (!stream) want.errors.push(noStream(e.id))
        else want.responses.push({ id: e.id, ...stream })
        open.delete(e.id)
        finished.add(e.id)
        break
      default:
        open.delete(e.id)
        finished.add(e.id)
    }
  }
  return [sent, want]
}

function frameOf(e: Event) {
  const empty = new Uint8Array(0)
  switch (e.kind) {
    case 'open':
      return { type: FrameType.REQUEST, requestId: e.id, endpoint: 'sum', payload: empty }
    case 'item':
      return { type: FrameType.CLIENT_ITEM, requestId: e.id, payload: json({ i: e.value }) }
    case 'end':
      return { type: FrameType.CLIENT_END, requestId: e.id, payload: empty }
    default:
      return { type: FrameType.CANCEL, requestId: e.id, payload: empty }
  }
}

const sort = <T>(xs: T[]) => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
const same = (a: unknown[], b: unknown[]) => JSON.stringify(sort(a)) === JSON.stringify(sort(b))

for (const carriage of ['websocket', 'tcp-direct', 'tcp-inject'] as Carriage[]) {
  t.test(`${carriage}: random client-stream interleavings follow PROTOCOL.md`, async (t) => {
    const server = await rawApp({
      tcp: { mode: carriage === 'tcp-inject' ? 'inject' : 'direct' },
      setup: (app) => {
        app.trivium.clientStream(
          'sum',
          { method: 'POST', url: '/sum' },
          async (requests: AsyncIterable<{ i: number }>) => {
            let sum = 0
            let count = 0
            for await (const tick of requests) {
              sum += tick.i
              count++
            }
            return { sum, count }
          },
        )
      },
    })
    t.teardown(() => server.app.close())
    await fc.assert(
      fc.asyncProperty(batches, async (plan) => {
        const c = await RawClient.open(carriage, server)
        const open = new Map<number, { sum: number; count: number }>()
        try {
          for (const batch of plan) {
            c.frames.length = 0
            const [sent, want] = model(batch, open)
            c.write(...sent.map(frameOf))
            const done = (frames: typeof c.frames) =>
              frames.filter((f) => f.type === FrameType.CREDIT).length >= want.credits.length &&
              frames.filter((f) => f.type === FrameType.RESPONSE).length >= want.responses.length &&
              frames.filter((f) => f.type === FrameType.ERROR).length >= want.errors.length
            await c.until(done, 10_000)
            await sleep(20) // anything that must not come (after CANCEL) would come now
            const got = c.frames
            const credits = got.filter((f) => f.type === FrameType.CREDIT).map((f) => f.requestId)
            if (!same(credits, want.credits)) throw new Error(`credits ${credits} ≠ ${want.credits}`)
            const responses = got
              .filter((f) => f.type === FrameType.RESPONSE)
              .map((f) => ({ id: f.requestId, ...dec(f.payload) }))
            if (!same(responses, want.responses))
              throw new Error(`responses ${JSON.stringify(responses)} ≠ ${JSON.stringify(want.responses)}`)
            const errors = got
              .filter((f) => f.type === FrameType.ERROR)
              .map((f) => ({ id: f.requestId, message: dec(f.payload).message as string }))
            if (!same(errors, want.errors))
              throw new Error(`errors ${JSON.stringify(errors)} ≠ ${JSON.stringify(want.errors)}`)
            const expected: number[] = [FrameType.CREDIT, FrameType.RESPONSE, FrameType.ERROR]
            const others = got.filter((f) => !expected.includes(f.type))
            if (others.length > 0) throw new Error(`unexpected frames ${others.map((f) => f.type)}`)
          }
        } finally {
          c.close()
        }
      }),
      { numRuns: carriage === 'tcp-inject' ? 15 : 30, endOnFailure: true },
    )
    t.pass('every run matched the model')
  })
}
