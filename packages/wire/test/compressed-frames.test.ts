// PROTOCOL.md "Compression": the 0x80 flag of the type byte, byte for byte as the examples show, and the
// inflated frame held to the frame limit.
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import {
  decodeWsFrame,
  encodeTcpFrame,
  encodeTcpFrameBody,
  FRAME_COMPRESSED,
  FrameError,
  FrameType,
  frameBody,
  type Inflate,
  inflateFrame,
  TcpFrameReader,
} from '@trivium/wire'
import t from 'tap'

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ')
const inflate: Inflate = (body, max) => inflateRawSync(body, { maxOutputLength: max })
const PAYLOAD = new TextEncoder().encode('{"items":["aaaa","aaaa","aaaa","aaaa"]}')

t.test('the examples of PROTOCOL.md', async (t) => {
  t.equal(
    hex(encodeTcpFrameBody(FrameType.PING | FRAME_COMPRESSED, 0, new Uint8Array())),
    '00 00 00 05 00 00 00 00 88',
  )
  t.equal(
    hex(encodeTcpFrameBody(FrameType.PONG | FRAME_COMPRESSED, 0, new Uint8Array())),
    '00 00 00 05 00 00 00 00 89',
  )
  const plain = encodeTcpFrame({ type: FrameType.RESPONSE, requestId: 1, payload: PAYLOAD })
  t.equal(plain.length, 48)
  t.match(hex(plain), /^00 00 00 2c 00 00 00 01 02 7b 22 69 74 65 6d 73/)
  const packed = encodeTcpFrameBody(FrameType.RESPONSE | FRAME_COMPRESSED, 1, deflateRawSync(PAYLOAD))
  t.equal(
    hex(packed),
    '00 00 00 1c 00 00 00 01 82 ab 56 ca 2c 49 cd 2d 56 b2 8a 56 4a 4c 4c 4c 54 d2 c1 46 c5 d6 02 00',
  )
})

t.test('a flagged frame is read as compressed and inflates to the plain frame', async (t) => {
  const body = frameBody({ type: FrameType.REQUEST, requestId: 9, endpoint: 'tasks.list', payload: PAYLOAD })
  const reader = new TcpFrameReader()
  const [frame] = reader.push(
    encodeTcpFrameBody(FrameType.REQUEST | FRAME_COMPRESSED, 9, deflateRawSync(body)),
  )
  t.equal(frame?.type, FrameType.REQUEST)
  t.equal(frame?.compressed, true)
  const plain = inflateFrame(frame as never, inflate, 1000, 1005)
  t.same(
    { ...plain, payload: [...plain.payload] },
    { type: FrameType.REQUEST, requestId: 9, endpoint: 'tasks.list', payload: [...PAYLOAD] },
  )
  // WebSocket framing: the same flag.
  const ws = decodeWsFrame(new Uint8Array([0x82, 0, 0, 0, 1, ...deflateRawSync(PAYLOAD)]))
  t.equal(ws.compressed, true)
  t.same([...inflateFrame(ws, inflate, 1000, 1005).payload], [...PAYLOAD])
})

t.test('the frame limit holds for the inflated body; bad data is malformed', async (t) => {
  const bomb = deflateRawSync(new Uint8Array(1024 * 1024)) // ~1 KiB → 1 MiB
  const frame = decodeWsFrame(new Uint8Array([0x84, 0, 0, 0, 3, ...bomb]))
  t.throws(() => inflateFrame(frame, inflate, 64 * 1024 - 5, 64 * 1024), {
    code: 'TRV_FRAME_TOO_LARGE',
    message: 'Frame inflates to more than the limit of 65536 bytes',
    requestId: 3,
  })
  const junk = decodeWsFrame(new Uint8Array([0x82, 0, 0, 0, 4, 1, 2, 3]))
  t.throws(() => inflateFrame(junk, inflate, 1000, 1005), {
    message: 'Compressed frame body is not valid deflate data',
    requestId: 4,
  })
})

t.test(
  'the flag on a type without a body, an unknown type, or PING/PONG with a body is refused',
  async (t) => {
    for (const [type, message] of [
      [0x85, 'Unknown frame type 0x85'], // STREAM_END
      [0x86, 'Unknown frame type 0x86'], // CANCEL
      [0x8a, 'Unknown frame type 0x8a'], // GOAWAY
      [0xff, 'Unknown frame type 0xff'],
    ] as const) {
      t.throws(() => decodeWsFrame(new Uint8Array([type, 0, 0, 0, 1])), { message }, message)
    }
    t.throws(() => decodeWsFrame(new Uint8Array([0x88, 0, 0, 0, 1, 0])), { message: 'PING has no payload' })
    t.throws(() => decodeWsFrame(new Uint8Array([0x81, 0, 0, 0, 0, 1])), {
      message: 'REQUEST needs a request id other than 0',
    })
    // The TCP reader refuses an unknown base type as soon as the header is readable.
    t.throws(() => new TcpFrameReader().push(encodeTcpFrameBody(0xff, 1, new Uint8Array())), FrameError)
  },
)
