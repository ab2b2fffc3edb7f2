// Endpoint names and topics are cached by their bytes (an FNV-1a hash, then a byte comparison): the
// cache must never return another name, whatever the hashes do, and must never skip validation.
import {
  decodeMetadata,
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import t from 'tap'

const utf8 = new TextEncoder()

function fnv1a(bytes: Uint8Array): number {
  let hash = 0x811c9dc5
  for (const b of bytes) hash = Math.imul(hash ^ b, 0x01000193)
  return hash
}

const request = (endpoint: string, requestId = 1) =>
  encodeWsFrame({ type: FrameType.REQUEST, requestId, endpoint, payload: utf8.encode('{}') })

/** Two different names with the same 32-bit FNV-1a hash (0xa2bc9e9a), found once by a birthday search over
 * `e.${i.toString(36)}` (~80k names, seconds of CPU) and written down so the test does not redo it. */
const COLLIDING: [string, string] = ['e.4pwu', 'e.f5fa']

t.test('names whose hashes collide decode to themselves, in any order and repeatedly', async (t) => {
  const [a, b] = COLLIDING
  t.not(a, b)
  t.equal(fnv1a(utf8.encode(a)), fnv1a(utf8.encode(b)), 'same hash')
  for (const name of [a, b, a, a, b, b, a]) t.equal(decodeWsFrame(request(name)).endpoint, name)
  // Same length and hash, so only the byte comparison tells them apart; also through the TCP reader.
  const reader = new TcpFrameReader()
  const frames = reader.push(
    Buffer.concat(
      [a, b, a].map((endpoint, i) =>
        encodeTcpFrame({ type: FrameType.REQUEST, requestId: i + 1, endpoint, payload: utf8.encode('{}') }),
      ),
    ),
  )
  t.same(
    frames.map((f) => f.endpoint),
    [a, b, a],
  )
})

t.test("a cached name is the same string; the payload is still the frame's own view", async (t) => {
  const one = decodeWsFrame(Buffer.from(request('users.getProfile', 1)))
  const bytes = Buffer.from(request('users.getProfile', 2))
  const two = decodeWsFrame(bytes)
  t.equal(one.endpoint, 'users.getProfile')
  t.equal(two.endpoint, 'users.getProfile')
  t.equal(two.requestId, 2)
  t.ok(Buffer.isBuffer(two.payload), 'a Buffer in, a Buffer view out')
  t.equal(two.payload.buffer, bytes.buffer, 'a view, not a copy')
  t.equal(two.payload.byteOffset, bytes.byteOffset + 5 + 'users.getProfile'.length + 1)
  t.same([...two.payload], [0x7b, 0x7d])
  // Non-ASCII names go through the cache too.
  for (let i = 0; i < 3; i++) t.equal(decodeWsFrame(request('café.ünï')).endpoint, 'café.ünï')
  // Topics (PUSH) share it.
  const push = encodeWsFrame({
    type: FrameType.PUSH,
    requestId: 0,
    topic: 'users.getProfile',
    payload: utf8.encode('1'),
  })
  t.equal(decodeWsFrame(push).topic, 'users.getProfile')
})

t.test(
  'many distinct names (more than the cache holds) all decode; invalid UTF-8 is refused every time',
  async (t) => {
    for (let round = 0; round < 2; round++) {
      let wrong = 0
      for (let i = 0; i < 2000; i++) {
        const name = `n${i}.${'x'.repeat(i % 200)}`
        if (decodeWsFrame(request(name)).endpoint !== name) wrong++
      }
      t.equal(wrong, 0, `round ${round}`)
    }
    const bad = new Uint8Array([FrameType.REQUEST, 0, 0, 0, 1, 0xff, 0xfe, 0])
    for (let i = 0; i < 3; i++) {
      t.throws(() => decodeWsFrame(bad), {
        code: 'TRV_FRAME_MALFORMED',
        message: /endpoint name is not valid UTF-8/,
      })
    }
  },
)

t.test(
  'metadata keys are cached the same way: colliding keys stay distinct, values are decoded each time',
  async (t) => {
    const [a, b] = COLLIDING
    const meta = { [a]: 'one', [b]: 'two', auth_token: 'x'.repeat(200) }
    for (let i = 0; i < 3; i++) {
      const bytes = encodeMetadata(meta)
      const { metadata, rest } = decodeMetadata(Buffer.concat([bytes, Buffer.from('{}')]))
      t.same({ ...metadata }, meta, `round ${i}`)
      t.equal(Object.getPrototypeOf(metadata), null)
      t.same([...rest], [0x7b, 0x7d])
    }
    // A repeated key is still refused when it comes from the cache.
    const twice = new Uint8Array([
      2, 0, 0, 0, 1, 0, 0, 0, 0x6b, 1, 0, 0, 0, 0x31, 1, 0, 0, 0, 0x6b, 1, 0, 0, 0, 0x32,
    ])
    for (let i = 0; i < 2; i++) {
      t.throws(() => decodeMetadata(twice), {
        code: 'TRV_FRAME_MALFORMED',
        message: 'Malformed metadata: repeated key "k"',
      })
    }
    // Long keys (over the cached size) decode too.
    const long = 'k'.repeat(100)
    t.same({ ...decodeMetadata(encodeMetadata({ [long]: 'v' })).metadata }, { [long]: 'v' })
  },
)

t.test(
  'a cached key keeps its own bytes: a socket buffer reused in place is not read as the old key',
  async (t) => {
    // Two keys of one length with one hash: the second arrives in the very bytes the first came in.
    const seen = new Map<number, string>()
    let pair: [string, string] | undefined
    for (let i = 36 ** 3; pair === undefined; i++) {
      const key = `k.${i.toString(36)}`
      const h = fnv1a(utf8.encode(key))
      const other = seen.get(h)
      if (other !== undefined) pair = [other, key]
      else seen.set(h, key)
    }
    const [a, b] = pair
    t.equal(a.length, b.length)
    const buffer = Buffer.from(encodeMetadata({ [a]: 'v' }))
    t.same({ ...decodeMetadata(buffer).metadata }, { [a]: 'v' })
    buffer.set(encodeMetadata({ [b]: 'v' })) // the same Buffer, overwritten (as a pooled read buffer is)
    t.same({ ...decodeMetadata(buffer).metadata }, { [b]: 'v' })
  },
)
