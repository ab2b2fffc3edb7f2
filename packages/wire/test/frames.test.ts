import {
  DEFAULT_MAX_FRAME_BYTES,
  decodeWsFrame,
  encodeCredit,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameError,
  FrameType,
  readCredit,
  TcpFrameReader,
} from '@trivium/wire'
import type { Test } from 'tap'
import t from 'tap'

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ')
const bytes = (h: string): Uint8Array =>
  new Uint8Array(
    h
      .split(/\s+/)
      .filter(Boolean)
      .map((x) => Number.parseInt(x, 16)),
  )
const plain = (f: Frame) => ({ ...f, payload: Array.from(f.payload) })

// Every frame type: [frame, WebSocket hex, TCP hex]
const cases: Array<[string, Frame, string, string]> = [
  [
    'REQUEST',
    { type: FrameType.REQUEST, requestId: 1, endpoint: 'ping', payload: bytes('aa bb') },
    '01 00 00 00 01 70 69 6e 67 00 aa bb',
    '00 00 00 0c 00 00 00 01 01 70 69 6e 67 00 aa bb',
  ],
  [
    'RESPONSE',
    { type: FrameType.RESPONSE, requestId: 0x01020304, payload: bytes('7b 7d') },
    '02 01 02 03 04 7b 7d',
    '00 00 00 07 01 02 03 04 02 7b 7d',
  ],
  [
    'ERROR',
    { type: FrameType.ERROR, requestId: 7, payload: bytes('7b 7d') },
    '03 00 00 00 07 7b 7d',
    '00 00 00 07 00 00 00 07 03 7b 7d',
  ],
  [
    'STREAM_ITEM',
    { type: FrameType.STREAM_ITEM, requestId: 2, payload: bytes('01') },
    '04 00 00 00 02 01',
    '00 00 00 06 00 00 00 02 04 01',
  ],
  [
    'STREAM_END',
    { type: FrameType.STREAM_END, requestId: 2, payload: bytes('') },
    '05 00 00 00 02',
    '00 00 00 05 00 00 00 02 05',
  ],
  [
    'CANCEL',
    { type: FrameType.CANCEL, requestId: 2, payload: bytes('') },
    '06 00 00 00 02',
    '00 00 00 05 00 00 00 02 06',
  ],
  [
    'PUSH',
    { type: FrameType.PUSH, requestId: 0, topic: 'news', payload: bytes('31') },
    '07 00 00 00 00 6e 65 77 73 00 31',
    '00 00 00 0b 00 00 00 00 07 6e 65 77 73 00 31',
  ],
  [
    'PING',
    { type: FrameType.PING, requestId: 9, payload: bytes('') },
    '08 00 00 00 09',
    '00 00 00 05 00 00 00 09 08',
  ],
  [
    'PONG',
    { type: FrameType.PONG, requestId: 9, payload: bytes('') },
    '09 00 00 00 09',
    '00 00 00 05 00 00 00 09 09',
  ],
  [
    'GOAWAY',
    { type: FrameType.GOAWAY, requestId: 0, payload: bytes('7b 7d') },
    '0a 00 00 00 00 7b 7d',
    '00 00 00 07 00 00 00 00 0a 7b 7d',
  ],
  [
    'SUBSCRIBE',
    { type: FrameType.SUBSCRIBE, requestId: 3, topic: 'a.b', payload: bytes('') },
    '0b 00 00 00 03 61 2e 62',
    '00 00 00 08 00 00 00 03 0b 61 2e 62',
  ],
  [
    'UNSUBSCRIBE',
    { type: FrameType.UNSUBSCRIBE, requestId: 4, topic: 'a.b', payload: bytes('') },
    '0c 00 00 00 04 61 2e 62',
    '00 00 00 08 00 00 00 04 0c 61 2e 62',
  ],
  // PROTOCOL.md "Client and bidirectional streams", examples
  [
    'CLIENT_ITEM',
    { type: FrameType.CLIENT_ITEM, requestId: 5, payload: bytes('7b 22 69 22 3a 31 7d') },
    '0d 00 00 00 05 7b 22 69 22 3a 31 7d',
    '00 00 00 0c 00 00 00 05 0d 7b 22 69 22 3a 31 7d',
  ],
  [
    'CLIENT_END',
    { type: FrameType.CLIENT_END, requestId: 5, payload: bytes('') },
    '0e 00 00 00 05',
    '00 00 00 05 00 00 00 05 0e',
  ],
  [
    'CREDIT',
    { type: FrameType.CREDIT, requestId: 5, payload: bytes('00 04 00 00') },
    '0f 00 00 00 05 00 04 00 00',
    '00 00 00 09 00 00 00 05 0f 00 04 00 00',
  ],
  [
    'STOP_SENDING',
    { type: FrameType.STOP_SENDING, requestId: 5, payload: bytes('') },
    '10 00 00 00 05',
    '00 00 00 05 00 00 00 05 10',
  ],
]

t.test('every frame type encodes and decodes to exact bytes', async (t) => {
  t.equal(cases.length, Object.keys(FrameType).length)
  for (const [name, frame, ws, tcp] of cases) {
    t.equal(hex(encodeWsFrame(frame)), ws, `${name} ws encode`)
    t.same(plain(decodeWsFrame(bytes(ws))), plain(frame), `${name} ws decode`)
    t.equal(hex(encodeTcpFrame(frame)), tcp, `${name} tcp encode`)
    t.same(plain(new TcpFrameReader().push(bytes(tcp))[0] as Frame), plain(frame), `${name} tcp decode`)
  }
})

t.test('PROTOCOL.md examples', async (t) => {
  const f = { type: FrameType.REQUEST, requestId: 1, endpoint: 'ping', payload: new Uint8Array(0) }
  t.equal(hex(encodeWsFrame(f)), '01 00 00 00 01 70 69 6e 67 00')
  t.equal(
    hex(encodeTcpFrame({ ...f, payload: bytes('00 00 00 00') })),
    '00 00 00 0e 00 00 00 01 01 70 69 6e 67 00 00 00 00 00',
  )
})

t.test('client stream frames: the PROTOCOL.md examples and their checks', async (t) => {
  t.equal(hex(encodeCredit(262_144)), '00 04 00 00')
  t.equal(readCredit(bytes('00 02 00 00')), 131_072)
  t.equal(
    hex(
      encodeTcpFrame({
        type: FrameType.REQUEST,
        requestId: 5,
        endpoint: 'sum',
        payload: bytes('00 00 00 00'),
      }),
    ),
    '00 00 00 0d 00 00 00 05 01 73 75 6d 00 00 00 00 00',
  )
  t.equal(
    hex(
      encodeWsFrame({
        type: FrameType.CLIENT_ITEM,
        requestId: 5,
        payload: bytes('01 04 00 00 00 01 00 00 00'),
      }),
    ),
    '0d 00 00 00 05 01 04 00 00 00 01 00 00 00',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0d 00 00 00 00 7b 7d')),
    'TRV_FRAME_MALFORMED',
    /^CLIENT_ITEM needs a request id other than 0$/,
    'item id 0',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0e 00 00 00 00')),
    'TRV_FRAME_MALFORMED',
    /^CLIENT_END needs a request id other than 0$/,
    'end id 0',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0e 00 00 00 05 01')),
    'TRV_FRAME_MALFORMED',
    /^CLIENT_END has no payload$/,
    'end body',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('10 00 00 00 05 01')),
    'TRV_FRAME_MALFORMED',
    /^STOP_SENDING has no payload$/,
    'stop body',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0f 00 00 00 05 00 10')),
    'TRV_FRAME_MALFORMED',
    /^CREDIT body must be 4 bytes \(the count of items\)$/,
    'short credit',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 09 00 00 00 05 0f 00 00 00 00')),
    'TRV_FRAME_MALFORMED',
    /^CREDIT count must be at least 1$/,
    'credit 0',
  )
  throwsCode(t, () => encodeCredit(0), 'TRV_FRAME_MALFORMED', /from 1 to 4294967295/, 'encode credit 0')
  throwsCode(
    t,
    () => encodeWsFrame({ type: FrameType.CREDIT, requestId: 5, payload: bytes('01') }),
    'TRV_FRAME_MALFORMED',
    /4 bytes/,
    'encode short credit',
  )
})

t.test('UTF-8 endpoint names and a Buffer-backed view decode', async (t) => {
  const f = { type: FrameType.REQUEST, requestId: 5, endpoint: 'café.ünï', payload: bytes('01 02') }
  const enc = encodeWsFrame(f)
  const padded = new Uint8Array(enc.length + 3)
  padded.set(enc, 3)
  const d = decodeWsFrame(padded.subarray(3))
  t.equal(d.endpoint, 'café.ünï')
  t.same(Array.from(d.payload), [1, 2])
  t.equal(decodeWsFrame(Buffer.from(enc)).endpoint, 'café.ünï')
})

function throwsCode(t: Test, fn: () => unknown, code: string, msg: RegExp, name: string): void {
  try {
    fn()
    t.fail(`${name}: did not throw`)
  } catch (err) {
    t.ok(err instanceof FrameError, `${name}: FrameError`)
    t.equal((err as FrameError).code, code, `${name}: code`)
    t.match((err as Error).message, msg, `${name}: message`)
  }
}

t.test('malformed WebSocket frames', async (t) => {
  throwsCode(
    t,
    () => decodeWsFrame(bytes('')),
    'TRV_FRAME_MALFORMED',
    /shorter than its 5-byte header/,
    'empty',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('01 00 00 00')),
    'TRV_FRAME_MALFORMED',
    /shorter/,
    'truncated header',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('00 00 00 00 01')),
    'TRV_FRAME_UNKNOWN_TYPE',
    /Unknown frame type 0x00/,
    'type 0',
  )
  throwsCode(t, () => decodeWsFrame(bytes('ff 00 00 00 01')), 'TRV_FRAME_UNKNOWN_TYPE', /0xff/, 'type ff')
  throwsCode(t, () => decodeWsFrame(bytes('13 00 00 00 01')), 'TRV_FRAME_UNKNOWN_TYPE', /0x13/, 'type 13')
  throwsCode(
    t,
    () => decodeWsFrame(bytes('01 00 00 00 01 70 69 6e 67')),
    'TRV_FRAME_MALFORMED',
    /Missing 0x00 terminator/,
    'no terminator',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('01 00 00 00 01 00 01')),
    'TRV_FRAME_MALFORMED',
    /Empty endpoint name/,
    'empty name',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('01 00 00 00 01 ff fe 00')),
    'TRV_FRAME_MALFORMED',
    /not valid UTF-8/,
    'bad utf-8 name',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('01 00 00 00 00 61 00')),
    'TRV_FRAME_MALFORMED',
    /request id other than 0/,
    'id 0',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0b 00 00 00 01 c3')),
    'TRV_FRAME_MALFORMED',
    /not valid UTF-8/,
    'bad utf-8 topic',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('0b 00 00 00 01')),
    'TRV_FRAME_MALFORMED',
    /Empty topic/,
    'empty topic',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('05 00 00 00 01 00')),
    'TRV_FRAME_MALFORMED',
    /STREAM_END has no payload/,
    'end body',
  )
  throwsCode(
    t,
    () => decodeWsFrame(bytes('07 00 00 00 00 61')),
    'TRV_FRAME_MALFORMED',
    /terminator after the topic/,
    'push',
  )
  // a name terminator beyond 255 bytes is not searched for
  const long = new Uint8Array(5 + 300)
  long.set(bytes('01 00 00 00 01'))
  long.fill(0x61, 5)
  long[5 + 280] = 0
  throwsCode(t, () => decodeWsFrame(long), 'TRV_FRAME_MALFORMED', /Missing 0x00 terminator/, 'name too long')
  const big = new Uint8Array(100)
  big.set(bytes('02 00 00 00 03'))
  throwsCode(
    t,
    () => decodeWsFrame(big, { maxFrameBytes: 99 }),
    'TRV_FRAME_TOO_LARGE',
    /100 bytes is over the limit of 99/,
    'too large',
  )
  try {
    decodeWsFrame(big, { maxFrameBytes: 99 })
  } catch (err) {
    t.equal((err as FrameError).requestId, 3, 'request id known for an error frame')
  }
  t.equal(decodeWsFrame(big, { maxFrameBytes: 100 }).payload.length, 95)
  t.ok(DEFAULT_MAX_FRAME_BYTES >= 1024 * 1024)
})

t.test('invalid frames are refused by the encoders', async (t) => {
  const enc = [encodeWsFrame, encodeTcpFrame]
  for (const e of enc) {
    throwsCode(
      t,
      () => e({ type: 0x42, requestId: 1, payload: bytes('') }),
      'TRV_FRAME_UNKNOWN_TYPE',
      /0x42/,
      'type',
    )
    throwsCode(
      t,
      () => e({ type: 1, requestId: 1, payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /endpoint must be/,
      'no name',
    )
    throwsCode(
      t,
      () => e({ type: 1, requestId: 1, endpoint: 'a\u0000b', payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /0x00/,
      'nul',
    )
    throwsCode(
      t,
      () => e({ type: 1, requestId: 1, endpoint: 'a'.repeat(256), payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /255/,
      'long',
    )
    throwsCode(
      t,
      () => e({ type: 2, requestId: -1, payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /requestId/,
      'neg id',
    )
    throwsCode(
      t,
      () => e({ type: 2, requestId: 2 ** 32, payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /requestId/,
      'big id',
    )
    throwsCode(
      t,
      () => e({ type: 6, requestId: 0, payload: bytes('') }),
      'TRV_FRAME_MALFORMED',
      /other than 0/,
      'cancel 0',
    )
    throwsCode(
      t,
      () => e({ type: 8, requestId: 1, payload: bytes('01') }),
      'TRV_FRAME_MALFORMED',
      /PING has no payload/,
      'ping',
    )
  }
  t.equal(hex(encodeWsFrame({ type: 2, requestId: 0xffffffff, payload: bytes('') })), '02 ff ff ff ff')
})

t.test('TCP reader: split and merged chunks', async (t) => {
  const frames: Frame[] = cases.map((c) => c[1])
  const stream = new Uint8Array(cases.reduce((n, c) => n + bytes(c[3]).length, 0))
  let o = 0
  for (const [, , , tcp] of cases) {
    stream.set(bytes(tcp), o)
    o += bytes(tcp).length
  }
  // all in one chunk
  t.same(new TcpFrameReader().push(stream).map(plain), frames.map(plain))
  // byte by byte, and every chunk size from 2 to 17
  for (let size = 1; size <= 17; size++) {
    const r = new TcpFrameReader()
    const got: Frame[] = []
    for (let i = 0; i < stream.length; i += size) {
      got.push(...r.push(stream.slice(i, i + size)))
    }
    t.same(got.map(plain), frames.map(plain), `chunks of ${size}`)
    t.equal(r.bufferedBytes, 0)
  }
  // frame and a half, then the rest
  const r = new TcpFrameReader()
  t.equal(r.push(stream.subarray(0, 20)).length, 1)
  t.equal(r.bufferedBytes, 4)
  t.equal(r.push(new Uint8Array(0)).length, 0)
  t.equal(r.push(stream.subarray(20)).length, cases.length - 1)
})

t.test('TCP reader: many frames in one chunk use a loop (no stack growth)', async (t) => {
  const one = encodeTcpFrame({ type: FrameType.PING, requestId: 1, payload: bytes('') })
  const n = 200_000
  const big = new Uint8Array(one.length * n)
  for (let i = 0; i < n; i++) big.set(one, i * one.length)
  t.equal(new TcpFrameReader().push(big).length, n)
})

t.test('TCP reader: malformed input, without allocating the claimed length', async (t) => {
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('ff ff ff ff')),
    'TRV_FRAME_TOO_LARGE',
    /4294967295 is over the limit/,
    'huge',
  )
  throwsCode(
    t,
    () => new TcpFrameReader({ maxFrameBytes: 10 }).push(bytes('00 00 00 0b')),
    'TRV_FRAME_TOO_LARGE',
    /11 is over the limit of 10/,
    'over max',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 04 00 00 00 01')),
    'TRV_FRAME_MALFORMED',
    /under the minimum of 5/,
    'short',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 00')),
    'TRV_FRAME_MALFORMED',
    /under the minimum/,
    'zero',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 10 00 00 00 01 77')),
    'TRV_FRAME_UNKNOWN_TYPE',
    /0x77/,
    'type early',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 09 00 00 00 01 01 61 62 63 64')),
    'TRV_FRAME_MALFORMED',
    /Missing 0x00 terminator/,
    'terminator',
  )
  throwsCode(
    t,
    () => new TcpFrameReader().push(bytes('00 00 00 07 00 00 00 01 01 c3 00')),
    'TRV_FRAME_MALFORMED',
    /UTF-8/,
    'utf8',
  )
  // split header: length arrives over two chunks, then the type byte in a third
  const r = new TcpFrameReader()
  t.same(r.push(bytes('7f')), [])
  throwsCode(t, () => r.push(bytes('ff ff ff')), 'TRV_FRAME_TOO_LARGE', /2147483647/, 'split huge')
  t.equal(r.bufferedBytes, 0)
  throwsCode(t, () => r.push(bytes('00')), 'TRV_FRAME_TOO_LARGE', /2147483647/, 'stays failed')
  const r2 = new TcpFrameReader()
  t.same(r2.push(bytes('00 00 00 10 00 00')), [])
  t.same(r2.push(bytes('00 01')), [])
  throwsCode(t, () => r2.push(bytes('63')), 'TRV_FRAME_UNKNOWN_TYPE', /0x63/, 'split type')
  // a claimed length within the limit is not allocated up front: the reader holds only what arrived
  const r3 = new TcpFrameReader()
  t.same(r3.push(bytes('00 10 00 00 00 00 00 01 02 aa')), [])
  t.equal(r3.bufferedBytes, 10)
  t.throws(() => new TcpFrameReader({ maxFrameBytes: 4 }), TypeError)
  t.throws(() => new TcpFrameReader({ maxFrameBytes: 4 }), {
    message: 'maxFrameBytes must be an integer of at least 5',
    code: 'TRV_WIRE_MAX_FRAME_BYTES',
  })
  const e = (() => {
    try {
      new TcpFrameReader().push(bytes('00 00 00 05 00 00 00 2a 42'))
    } catch (err) {
      return err as FrameError
    }
    return undefined
  })()
  t.equal(e?.requestId, 42)
})
