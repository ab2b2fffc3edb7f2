// Client and bidirectional streams over real sockets, byte by byte (PROTOCOL.md "Client and bidirectional
// streams"): the exchange of the examples, and every refusal of a client that breaks the rules — an item
// for an unknown stream id, an item after the half-close, items beyond the credit, a model in the opening
// REQUEST, server-to-client frames sent by the client, too many streams — on WebSocket, TCP direct and TCP
// inject. Each refusal is one ERROR in the error body for that id; the connection goes on serving.
import { jsonSchemaModel } from '@trivium/core'
import { type Frame, FrameType } from '@trivium/wire'
import t from 'tap'
import { CARRIAGES, dec, json, type RawApp, RawClient, rawApp, request, until } from './raw-frames.ts'

const EMPTY = new Uint8Array(0)
const hex = (b: Uint8Array | undefined) =>
  Array.from(b ?? [], (x) => x.toString(16).padStart(2, '0')).join(' ')
const Tick = jsonSchemaModel<{ i: number }>('Tick', {
  type: 'object',
  properties: { i: { type: 'integer' } },
  required: ['i'],
  additionalProperties: false,
})

const open = (requestId: number, endpoint: string): Frame => ({
  type: FrameType.REQUEST,
  requestId,
  endpoint,
  payload: EMPTY,
})
const item = (requestId: number, value: unknown): Frame => ({
  type: FrameType.CLIENT_ITEM,
  requestId,
  payload: json(value),
})
const end = (requestId: number): Frame => ({ type: FrameType.CLIENT_END, requestId, payload: EMPTY })
const of = (frames: Frame[], id: number) => frames.filter((f) => f.requestId === id)
const hasType = (id: number, type: number) => (frames: Frame[]) =>
  frames.some((f) => f.requestId === id && f.type === type)

function validation(message: string) {
  return { statusCode: 400, code: 'TRV_VALIDATION', error: 'ValidationException', message }
}

/** A server with `sum` (client stream), `double` (bidirectional) and `stall` (reads one item, then waits). */
async function streamApp(
  mode: 'direct' | 'inject',
  clientStreamWindowBytes?: number,
): Promise<RawApp & { stalled: () => number; woken: () => string | undefined }> {
  let stalled = 0
  let woken: string | undefined
  const server = await rawApp({
    ws: { clientStreamWindowBytes },
    tcp: { mode, clientStreamWindowBytes },
    setup(app) {
      app.trivium.clientStream(
        'sum',
        { method: 'POST', url: '/sum', request: Tick },
        async (requests: AsyncIterable<{ i: number }>) => {
          let sum = 0
          let count = 0
          for await (const tick of requests) {
            if (tick.i < 0) break
            sum += tick.i
            count++
          }
          return { sum, count }
        },
      )
      app.trivium.bidiStream(
        'double',
        { method: 'POST', url: '/double', request: Tick },
        async function* (requests: AsyncIterable<{ i: number }>) {
          for await (const tick of requests) yield { i: tick.i * 2 }
        },
      )
      // Waits for an item past its deadline: the call is answered with the deadline error (PROTOCOL.md
      // "Deadlines") and the handler is woken (next() rejects with the signal's reason).
      app.trivium.clientStream(
        'deadline',
        { method: 'POST', url: '/deadline', request: Tick, timeoutMs: 50 },
        async (requests: AsyncIterable<{ i: number }>, call) => {
          try {
            for await (const _ of requests) {
              // no item comes
            }
            woken = 'ended'
          } catch (err) {
            woken = call.signal.aborted && err === call.signal.reason ? 'by the deadline' : String(err)
          }
          return { sum: 0, count: 0 }
        },
      )
      // Reads until the half-close or one item, then holds the call open until it is aborted.
      app.trivium.clientStream(
        'stall',
        { method: 'POST', url: '/stall', request: Tick },
        async (requests: AsyncIterable<{ i: number }>, call) => {
          const it = requests[Symbol.asyncIterator]()
          try {
            await it.next()
            await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }))
            return { sum: 0, count: 0 }
          } finally {
            stalled++
          }
        },
      )
    },
  })
  return { ...server, stalled: () => stalled, woken: () => woken }
}

for (const carriage of CARRIAGES) {
  const mode = carriage === 'tcp-inject' ? 'inject' : 'direct'

  t.test(`${carriage}: the PROTOCOL.md exchange: REQUEST, CREDIT, items, CLIENT_END, RESPONSE`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(open(5, 'sum'))
    await c.until(hasType(5, FrameType.CREDIT))
    t.equal(hex(of(c.frames, 5)[0]?.payload), '00 04 00 00', 'CREDIT of the window, 262144 bytes')
    c.write(item(5, { i: 1 }), item(5, { i: 2 }), item(5, { i: 3 }), end(5))
    await c.until(() => c.answerTo(5) !== undefined)
    t.same(
      of(c.frames, 5).map((f) => f.type),
      [FrameType.CREDIT, FrameType.RESPONSE],
    )
    t.same(dec(c.answerTo(5)?.payload), { sum: 6, count: 3 })

    // Bidirectional: each item answered while the stream is open; STREAM_END after CLIENT_END.
    c.write(open(6, 'double'))
    await c.until(hasType(6, FrameType.CREDIT))
    c.write(item(6, { i: 21 }))
    await c.until(hasType(6, FrameType.STREAM_ITEM))
    t.same(dec(of(c.frames, 6).find((f) => f.type === FrameType.STREAM_ITEM)?.payload), { i: 42 })
    c.write(end(6))
    await c.until(hasType(6, FrameType.STREAM_END))
    t.same(
      of(c.frames, 6).map((f) => f.type),
      [FrameType.CREDIT, FrameType.STREAM_ITEM, FrameType.STREAM_END],
    )
    c.close()
  })

  t.test(`${carriage}: the endpoint's timeoutMs wakes a handler waiting for an item`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(open(8, 'deadline'))
    await c.until(() => c.answerTo(8) !== undefined)
    t.equal(c.answerTo(8)?.type, FrameType.ERROR)
    t.same(dec(c.answerTo(8)?.payload), {
      statusCode: 504,
      code: 'TRV_TIMEOUT',
      error: 'TimeoutException',
      message: 'Deadline of 50 ms exceeded',
      requestId: dec(c.answerTo(8)?.payload).requestId,
    })
    await until(() => server.woken() !== undefined, 'the handler to be woken')
    t.equal(server.woken(), 'by the deadline', 'the handler waiting for an item is woken by the deadline')
    c.close()
  })

  t.test(`${carriage}: an item or a half-close for an unknown stream id is refused`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(item(77, { i: 1 }), end(78))
    await c.until(() => c.answerTo(77) !== undefined && c.answerTo(78) !== undefined)
    t.match(dec(c.answerTo(77)?.payload), validation('No client stream 77 is open on this connection'))
    t.match(dec(c.answerTo(78)?.payload), validation('No client stream 78 is open on this connection'))
    // A unary call in flight with that id: cancelled, the ERROR is its one answer.
    c.write(request(9, 'slow', { ms: 5000 }))
    await until(() => server.started() === 1, 'the slow call to start')
    c.write(item(9, { i: 1 }))
    await c.until(() => c.answerTo(9) !== undefined)
    t.match(dec(c.answerTo(9)?.payload), validation('No client stream 9 is open on this connection'))
    await until(() => server.finished() === 1, 'the slow call to be aborted')
    c.write(request(10, 'echo', { still: 'open' }))
    await c.until(() => c.answerTo(10) !== undefined)
    t.same(dec(c.answerTo(10)?.payload), { still: 'open' }, 'the connection still serves calls')
    t.equal(of(c.frames, 9).length, 1, 'one answer for id 9')
    c.close()
  })

  t.test(`${carriage}: an item after the half-close ends the stream with one ERROR`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(open(3, 'stall'))
    await c.until(hasType(3, FrameType.CREDIT))
    c.write(end(3), item(3, { i: 1 }))
    await c.until(() => c.answerTo(3) !== undefined)
    t.match(
      dec(c.answerTo(3)?.payload),
      validation('Client stream 3 is half-closed: nothing may follow CLIENT_END'),
    )
    await until(() => server.stalled() === 1, 'the handler to be aborted')
    c.write(request(4, 'echo', {}))
    await c.until(() => c.answerTo(4) !== undefined)
    t.same(
      of(c.frames, 3).map((f) => f.type),
      [FrameType.CREDIT, FrameType.ERROR],
      'nothing else for the stream',
    )
    c.close()
  })

  t.test(`${carriage}: an item with no credit left is refused: the server never buffers more`, async (t) => {
    const server = await streamApp(mode, 64)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(open(7, 'stall'))
    await c.until(hasType(7, FrameType.CREDIT))
    t.equal(hex(of(c.frames, 7)[0]?.payload), '00 00 00 40', 'a window of 64 bytes')
    // `{"i":n}` is 7 bytes: the tenth item goes out with 1 byte of credit left, the eleventh has none.
    c.write(...Array.from({ length: 11 }, (_, i) => item(7, { i })))
    await c.until(() => c.answerTo(7) !== undefined)
    t.match(
      dec(c.answerTo(7)?.payload),
      validation('Client stream 7 sent an item with no credit left (window 64 bytes)'),
    )
    await until(() => server.stalled() === 1, 'the handler to be aborted')
    t.same(
      of(c.frames, 7).map((f) => f.type),
      [FrameType.CREDIT, FrameType.ERROR],
    )
    c.close()
  })

  t.test(`${carriage}: a bad opening, a bad item, frames only the server sends`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(request(1, 'sum', { i: 1 }))
    await c.until(() => c.answerTo(1) !== undefined)
    t.match(
      dec(c.answerTo(1)?.payload),
      validation(
        "A client stream's REQUEST carries no request model: send the requests as CLIENT_ITEM frames",
      ),
    )
    c.write(open(2, 'sum'))
    await c.until(hasType(2, FrameType.CREDIT))
    c.write(item(2, { i: 'x' }))
    await c.until(() => c.answerTo(2) !== undefined)
    const bad = dec(c.answerTo(2)?.payload)
    t.match(bad, { statusCode: 400, code: 'TRV_VALIDATION', error: 'ValidationException' })
    t.match(bad.message, /^Invalid Tick: i /)
    c.write(
      { type: FrameType.CREDIT, requestId: 3, payload: new Uint8Array([0, 0, 0, 1]) },
      { type: FrameType.STOP_SENDING, requestId: 4, payload: EMPTY },
    )
    await c.until(() => c.answerTo(3) !== undefined && c.answerTo(4) !== undefined)
    t.match(dec(c.answerTo(3)?.payload), validation('Frame type CREDIT cannot be sent to the server'))
    t.match(dec(c.answerTo(4)?.payload), validation('Frame type STOP_SENDING cannot be sent to the server'))
    c.close()
  })

  t.test(`${carriage}: items sent before the client saw the answer are dropped, not refused`, async (t) => {
    const server = await streamApp(mode)
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(open(9, 'sum'))
    await c.until(hasType(9, FrameType.CREDIT))
    c.write(item(9, { i: 1 }), item(9, { i: -1 }))
    await c.until(() => c.answerTo(9) !== undefined)
    t.same(dec(c.answerTo(9)?.payload), { sum: 1, count: 1 })
    c.write(item(9, { i: 5 }), end(9), request(10, 'echo', {}))
    await c.until(() => c.answerTo(10) !== undefined)
    t.same(
      of(c.frames, 9).map((f) => f.type),
      [FrameType.CREDIT, FrameType.STOP_SENDING, FrameType.RESPONSE],
      'the handler stopped reading (STOP_SENDING), answered; the late item got nothing',
    )
    // Its CLIENT_END ended the memory of the stream: a later item is an unknown id again.
    c.write(item(9, { i: 6 }))
    await c.until(hasType(9, FrameType.ERROR))
    t.match(
      dec(of(c.frames, 9).find((f) => f.type === FrameType.ERROR)?.payload),
      validation('No client stream 9 is open on this connection'),
    )
    c.close()
  })

  t.test(`${carriage}: at most maxClientStreams (16) open per connection; shutdown ends them`, async (t) => {
    const server = await streamApp(mode)
    let closed = false
    t.teardown(() => (closed ? undefined : server.app.close()))
    const c = await RawClient.open(carriage, server)
    const ids = Array.from({ length: 16 }, (_, i) => 20 + i)
    c.write(...ids.map((id) => open(id, 'stall')))
    await c.until((frames) => ids.every((id) => hasType(id, FrameType.CREDIT)(frames)))
    c.write(open(40, 'stall'))
    await c.until(() => c.answerTo(40) !== undefined)
    t.match(dec(c.answerTo(40)?.payload), {
      statusCode: 429,
      code: 'TRV_RATE_LIMITED',
      error: 'RateLimitExceededException',
      message: 'Too many client streams open on this connection (limit 16)',
      retryAfter: 1,
    })
    c.write({ type: FrameType.CANCEL, requestId: 20, payload: EMPTY }, open(41, 'stall'))
    await c.until(hasType(41, FrameType.CREDIT))
    t.pass('a cancelled stream frees its place')
    await until(() => server.stalled() === 1, 'the cancelled handler to stop')
    const closing = server.app.close()
    closed = true
    await c.until(() => [...ids.slice(1), 41].every((id) => c.answerTo(id) !== undefined))
    for (const id of [...ids.slice(1), 41]) {
      t.match(dec(c.answerTo(id)?.payload), {
        statusCode: 503,
        error: 'ServiceUnavailableException',
        message: 'Server is shutting down',
      })
    }
    await closing
    t.equal(server.stalled(), 17, 'every handler was stopped')
  })
}

// PROTOCOL.md's whole exchange: a 64-byte window, 7-byte items; the refill after the handler took 35 bytes.
t.test('websocket: the credit of the PROTOCOL.md exchange (window 64, refill 35)', async (t) => {
  const taken: number[] = []
  let release: (() => void) | undefined
  const server = await rawApp({
    ws: { clientStreamWindowBytes: 64 },
    setup(app) {
      app.trivium.clientStream(
        'sum',
        { method: 'POST', url: '/sum', request: Tick },
        async (requests: AsyncIterable<{ i: number }>) => {
          let sum = 0
          for await (const tick of requests) {
            taken.push(tick.i)
            sum += tick.i
            // Holds after the fifth item until the test has seen the refill.
            if (taken.length === 5) await new Promise<void>((resolve) => (release = resolve))
          }
          return { sum, count: taken.length }
        },
      )
    },
  })
  t.teardown(() => server.app.close())
  const c = await RawClient.open('websocket', server)
  c.write(open(5, 'sum'))
  await c.until(hasType(5, FrameType.CREDIT))
  c.write(...Array.from({ length: 10 }, (_, i) => item(5, { i })))
  await c.until((frames) => of(frames, 5).filter((f) => f.type === FrameType.CREDIT).length === 2)
  t.same(
    of(c.frames, 5).map((f) => hex(f.payload)),
    ['00 00 00 40', '00 00 00 23'],
    'CREDIT 64, then 35 once the handler took 5 items (35 bytes, at least half the window)',
  )
  release?.()
  c.write(item(5, { i: 10 }), item(5, { i: 11 }), item(5, { i: 12 }), end(5))
  await c.until(() => c.answerTo(5) !== undefined)
  t.same(dec(c.answerTo(5)?.payload), { sum: 78, count: 13 })
  c.close()
})
