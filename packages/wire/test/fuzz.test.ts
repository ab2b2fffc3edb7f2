// Property fuzzing of the frame readers (bounded: a few seconds). Whatever the bytes, decodeWsFrame,
// TcpFrameReader and decodeMetadata either return or throw FrameError — never another error, never a
// hang. Valid frame streams cut into random chunks are reassembled into exactly the frames sent.
// The long run (10 million inputs per decoder) is bench/codec/fuzz.mjs.
import {
  decodeMetadata,
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameError,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import fc from 'fast-check'
import t from 'tap'
// @ts-expect-error: a plain .mjs module shared with the long-run fuzzer
import { damage } from '../../../bench/codec/fuzz-inputs.mjs'

const RUNS = 3000
const NAMED = new Set<number>([FrameType.REQUEST, FrameType.PUSH, FrameType.SUBSCRIBE, FrameType.UNSUBSCRIBE])
const EMPTY = new Set<number>([FrameType.STREAM_END, FrameType.CANCEL, FrameType.PING, FrameType.PONG])

const name = fc.string({ minLength: 1, maxLength: 24, unit: 'grapheme' }).filter((s) => !s.includes('\u0000'))
const frame: fc.Arbitrary<Frame> = fc
  .record({
    type: fc.constantFrom(...Object.values(FrameType)),
    requestId: fc.integer({ min: 1, max: 2 ** 32 - 1 }),
    name,
    payload: fc.uint8Array({ maxLength: 64 }),
  })
  .map(({ type, requestId, name, payload }) => ({
    type,
    requestId: type === FrameType.PUSH ? 0 : requestId,
    ...(type === FrameType.REQUEST ? { endpoint: name } : {}),
    ...(NAMED.has(type) && type !== FrameType.REQUEST ? { topic: name } : {}),
    payload:
      EMPTY.has(type) || type === FrameType.SUBSCRIBE || type === FrameType.UNSUBSCRIBE
        ? new Uint8Array(0)
        : payload,
  }))
  .filter((f) => {
    try {
      decodeWsFrame(encodeWsFrame(f))
      return true
    } catch {
      return false
    }
  })

/** Valid bytes with random damage: overwritten bytes, then maybe cut or extended. */
function damaged(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(
      valid,
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      fc.option(fc.nat()),
      fc.uint8Array({ maxLength: 8 }),
    )
    .map(([bytes, edits, cut, tail]) => damage(bytes, edits, cut, tail))
}

/** Calls fn; a FrameError is an answer, anything else fails the property. */
function onlyFrameErrors(fn: () => unknown): boolean {
  try {
    fn()
  } catch (err) {
    if (!(err instanceof FrameError)) throw err
  }
  return true
}

/** Cuts bytes into chunks at the given points. */
function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Uint8Array[] = []
  let from = 0
  for (const p of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, p))
    from = p
  }
  return chunks
}

const comparable = (f: Frame) => ({ ...f, payload: Array.from(f.payload) })

t.test('decodeWsFrame: random and damaged bytes give a frame or a FrameError', async (t) => {
  const inputs = fc.oneof(fc.uint8Array({ maxLength: 300 }), damaged(frame.map(encodeWsFrame)))
  fc.assert(
    fc.property(inputs, (bytes) => onlyFrameErrors(() => decodeWsFrame(bytes))),
    { numRuns: RUNS },
  )
  fc.assert(
    fc.property(frame, (f) => {
      t.same(comparable(decodeWsFrame(encodeWsFrame(f))), comparable(f))
      return true
    }),
    { numRuns: 500 },
  )
  t.pass('no other error')
})

t.test('TcpFrameReader: valid streams in random chunks are reassembled exactly', async (t) => {
  fc.assert(
    fc.property(fc.array(frame, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (frames, cuts) => {
      const stream = Uint8Array.from(frames.flatMap((f) => Array.from(encodeTcpFrame(f))))
      const reader = new TcpFrameReader()
      const got = chunked(stream, cuts).flatMap((c) => reader.push(c))
      if (reader.bufferedBytes !== 0) return false
      return JSON.stringify(got.map(comparable)) === JSON.stringify(frames.map(comparable))
    }),
    { numRuns: RUNS },
  )
  t.pass('every stream reassembled')
})

t.test('TcpFrameReader: random and damaged streams in random chunks only throw FrameError', async (t) => {
  const streams = fc.oneof(
    fc.uint8Array({ maxLength: 400 }),
    damaged(
      fc
        .array(frame, { maxLength: 5 })
        .map((fs) => Uint8Array.from(fs.flatMap((f) => Array.from(encodeTcpFrame(f))))),
    ),
  )
  fc.assert(
    fc.property(
      streams,
      fc.array(fc.nat(), { maxLength: 12 }),
      fc.integer({ min: 5, max: 600 }),
      (bytes, cuts, max) =>
        onlyFrameErrors(() => {
          const reader = new TcpFrameReader({ maxFrameBytes: max })
          for (const chunk of chunked(bytes, cuts)) reader.push(chunk)
          // What is held is never more than one frame's worth.
          if (reader.bufferedBytes > max + 4) throw new Error(`buffered ${reader.bufferedBytes} > ${max + 4}`)
        }),
    ),
    { numRuns: RUNS },
  )
  t.pass('no other error')
})

t.test('decodeMetadata: random and damaged maps give a map or a FrameError', async (t) => {
  const map = fc.dictionary(fc.string({ maxLength: 12 }), fc.string({ maxLength: 24 }), { maxKeys: 8 })
  const inputs = fc.oneof(fc.uint8Array({ maxLength: 200 }), damaged(map.map(encodeMetadata)))
  fc.assert(
    fc.property(inputs, (bytes) =>
      onlyFrameErrors(() => {
        const { metadata } = decodeMetadata(bytes)
        if (Object.getPrototypeOf(metadata) !== null) throw new Error('metadata has a prototype')
      }),
    ),
    { numRuns: RUNS },
  )
  fc.assert(
    fc.property(map, (m) => {
      const { metadata, rest } = decodeMetadata(encodeMetadata(m))
      return rest.length === 0 && JSON.stringify({ ...metadata }) === JSON.stringify(m)
    }),
    { numRuns: 500 },
  )
  t.pass('no other error')
})
