import {
  BinaryReader,
  BinaryWriter,
  DecodeError,
  decodeMessage,
  EncodeError,
  encodeMessage,
  type FieldError,
  FORMAT_VERSION,
  jInt32,
} from '@trivium/codec/runtime'
import type { Test } from 'tap'
import t from 'tap'

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ')
const bytes = (h: string) => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'))

function written(fn: (w: BinaryWriter) => void): string {
  const w = new BinaryWriter(4)
  fn(w)
  return hex(w.finish())
}

function decodeError(t: Test, fn: () => unknown, message: string) {
  try {
    fn()
    t.fail(`expected DecodeError: ${message}`)
  } catch (err) {
    t.type(err, DecodeError)
    t.equal((err as Error).message, message)
    t.equal((err as DecodeError).code, 'TRV_DECODE')
  }
}

t.test('writer: each primitive, exact bytes (little-endian)', async (t) => {
  t.equal(
    written((w) => w.int32(1)),
    '01 00 00 00',
  )
  t.equal(
    written((w) => w.int32(-2)),
    'fe ff ff ff',
  )
  t.equal(
    written((w) => w.int32(0x12345678)),
    '78 56 34 12',
  )
  t.equal(
    written((w) => w.int64(1n)),
    '01 00 00 00 00 00 00 00',
  )
  t.equal(
    written((w) => w.int64(-1n)),
    'ff ff ff ff ff ff ff ff',
  )
  t.equal(
    written((w) => w.int64(2n ** 63n - 1n)),
    'ff ff ff ff ff ff ff 7f',
  )
  t.equal(
    written((w) => w.int64(-(2n ** 63n))),
    '00 00 00 00 00 00 00 80',
  )
  t.equal(
    written((w) => w.int64(-3)),
    'fd ff ff ff ff ff ff ff',
    'a safe-integer number is accepted',
  )
  t.equal(
    written((w) => w.int64(2 ** 40 + 5)),
    '05 00 00 00 00 01 00 00',
  )
  t.equal(
    written((w) => w.float32(1.5)),
    '00 00 c0 3f',
  )
  t.equal(
    written((w) => w.float64(1.5)),
    '00 00 00 00 00 00 f8 3f',
  )
  t.equal(
    written((w) => w.float64(Number.NaN)),
    '00 00 00 00 00 00 f8 7f',
  )
  t.equal(
    written((w) => w.bool(true)),
    '01',
  )
  t.equal(
    written((w) => w.bool(false)),
    '00',
  )
  t.equal(
    written((w) => w.string('')),
    '00 00 00 00',
  )
  t.equal(
    written((w) => w.string('hé')),
    '03 00 00 00 68 c3 a9',
  )
  t.equal(
    written((w) => w.string('€😀')),
    '07 00 00 00 e2 82 ac f0 9f 98 80',
  )
  t.equal(
    written((w) => w.string('a\ud800b')),
    '05 00 00 00 61 ef bf bd 62',
    'lone surrogate → U+FFFD',
  )
  const long = 'ünïcødé-'.repeat(20)
  t.equal(
    written((w) => w.string(long)),
    hex(
      new Uint8Array([
        ...new Uint8Array(new Int32Array([Buffer.byteLength(long)]).buffer),
        ...Buffer.from(long),
      ]),
    ),
  )
  t.equal(
    written((w) => w.bytes(new Uint8Array([1, 2, 255]))),
    '03 00 00 00 01 02 ff',
  )
  t.equal(
    written((w) => w.datetime(new Date(0))),
    '00 00 00 00 00 00 00 00',
  )
  t.equal(
    written((w) => w.datetime(new Date(-1))),
    'ff ff ff ff ff ff ff ff',
  )
  t.equal(
    written((w) => w.datetime(new Date(Date.UTC(2024, 0, 1)))),
    '00 f4 51 c2 8c 01 00 00',
  )
  t.equal(
    written((w) => w.count(3)),
    '03 00 00 00',
  )
  t.equal(
    written((w) => {
      const at = w.beginModel()
      w.int32(7)
      w.endModel(at)
    }),
    '04 00 00 00 07 00 00 00',
  )
})

t.test('writer: values that do not fit their type are EncodeErrors, never wrapped or rounded', async (t) => {
  const w = new BinaryWriter()
  t.throws(() => w.int32(1.5), new EncodeError('expected int32, got number 1.5'))
  t.throws(() => w.int32(2 ** 31), new EncodeError('expected int32, got number 2147483648'))
  t.throws(() => w.int64(2n ** 63n), new EncodeError('int64 out of range: 9223372036854775808'))
  t.throws(() => w.int64(2 ** 53), new EncodeError('expected int64, got number 9007199254740992'))
  t.throws(() => w.string(5 as unknown as string), new EncodeError('expected string, got number 5'))
  t.throws(() => w.bool(1 as unknown as boolean), new EncodeError('expected bool, got number 1'))
  t.throws(() => w.datetime(new Date(Number.NaN)), new EncodeError('expected a valid Date, got Date'))
  t.throws(
    () => w.bytes([1] as unknown as Uint8Array),
    new EncodeError('expected bytes (Uint8Array), got array'),
  )
  t.throws(() => w.any(10n), new EncodeError('any: cannot encode a bigint'))
})

t.test('any: tagged encoding, exact bytes and round trip', async (t) => {
  t.equal(
    written((w) => w.any(null)),
    '00',
  )
  t.equal(
    written((w) => w.any(false)),
    '01',
  )
  t.equal(
    written((w) => w.any(true)),
    '02',
  )
  t.equal(
    written((w) => w.any(-1)),
    '03 ff ff ff ff',
  )
  t.equal(
    written((w) => w.any(0.5)),
    '04 00 00 00 00 00 00 e0 3f',
  )
  t.equal(
    written((w) => w.any('a')),
    '05 01 00 00 00 61',
  )
  t.equal(
    written((w) => w.any([1])),
    '06 01 00 00 00 03 01 00 00 00',
  )
  t.equal(
    written((w) => w.any({ k: null, u: undefined })),
    '07 01 00 00 00 01 00 00 00 6b 00',
  )
  const value = { a: [1, 2.5, 'x', null, true, { b: -0 }], c: { d: [] } }
  const w = new BinaryWriter()
  w.any(value)
  const r = new BinaryReader(w.finish())
  const back = r.any() as typeof value
  t.same(back, value)
  t.ok(Object.is((back.a[5] as { b: number }).b, -0), '-0 is kept (float64)')
  const proto = new BinaryReader(
    bytes('07 01 00 00 00 09 00 00 00 5f 5f 70 72 6f 74 6f 5f 5f 03 01 00 00 00'),
  ).any()
  t.equal(Object.getPrototypeOf(proto), Object.prototype, '__proto__ key is data, not a prototype')
  t.same(Object.keys(proto as object), ['__proto__'])
})

t.test('reader: primitives', async (t) => {
  const r = new BinaryReader(
    bytes('fe ff ff ff  ff ff ff ff ff ff ff ff  00 00 c0 3f  01  03 00 00 00 68 c3 a9'),
  )
  t.equal(r.int32(), -2)
  t.equal(r.int64(), -1n)
  t.equal(r.float32(), 1.5)
  t.equal(r.bool(), true)
  t.equal(r.string(), 'hé')
  t.equal(r.remaining, 0)
  t.same(new BinaryReader(bytes('00 f4 51 c2 8c 01 00 00')).datetime(), new Date(Date.UTC(2024, 0, 1)))
  t.same(new BinaryReader(bytes('02 00 00 00 ab cd')).bytes(), new Uint8Array([0xab, 0xcd]))
})

t.test('reader: every kind of bad input is a DecodeError with an exact message', async (t) => {
  decodeError(
    t,
    () => new BinaryReader(bytes('01 02')).int32(),
    'truncated: needed 4 bytes at offset 0, 2 left',
  )
  decodeError(t, () => new BinaryReader(bytes('')).bool(), 'truncated: needed 1 bytes at offset 0, 0 left')
  decodeError(t, () => new BinaryReader(bytes('ff ff ff ff')).string(), 'negative length -1 at offset 0')
  decodeError(
    t,
    () => new BinaryReader(bytes('ff ff ff 7f 61 62')).string(),
    'length 2147483647 at offset 0 exceeds the 2 bytes left',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes('02 00 00 00 c3 28')).string(),
    'invalid UTF-8 in string at offset 0',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes('01 00 00 00 ff')).string(),
    'invalid UTF-8 in string at offset 0',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes(`23 00 00 00${' e2 82'.repeat(17)} ac`)).string(),
    'invalid UTF-8 in string at offset 0',
  )
  // A surrogate's UTF-8-shaped bytes (CESU-8) are invalid UTF-8: a binary string cannot carry a lone
  // surrogate, short or long (PROTOCOL.md "Decoding rules").
  decodeError(
    t,
    () => new BinaryReader(bytes('03 00 00 00 ed a0 80')).string(),
    'invalid UTF-8 in string at offset 0',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes(`43 00 00 00${' 61'.repeat(64)} ed b0 80`)).string(),
    'invalid UTF-8 in string at offset 0',
  )
  decodeError(t, () => new BinaryReader(bytes('02')).bool(), 'invalid bool byte 0x02 at offset 0')
  decodeError(t, () => new BinaryReader(bytes('ff')).presence(), 'invalid optional marker 0xff at offset 0')
  decodeError(
    t,
    () => new BinaryReader(bytes('00 00 00 80')).count(1),
    'negative count -2147483648 at offset 0',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes('03 00 00 00 01 00 00 00 02 00 00 00')).count(4),
    'count 3 at offset 0 exceeds the 8 bytes left',
  )
  decodeError(
    t,
    () => new BinaryReader(bytes('ff ff ff ff ff ff ff 7f')).datetime(),
    'datetime out of range at offset 0',
  )
  decodeError(t, () => new BinaryReader(bytes('09')).any(), 'invalid any tag 0x09 at offset 0')
  decodeError(
    t,
    () => new BinaryReader(bytes('07 02 00 00 00 01 00 00 00 61 00 01 00 00 00 61 00')).any(),
    'duplicate key "a" in any object at offset 11',
  )
  const deep = bytes(`${'06 01 00 00 00'.repeat(70)} 00`)
  decodeError(t, () => new BinaryReader(deep).any(), 'nesting deeper than 64 levels')
  t.equal((new BinaryReader(deep, { maxDepth: 100 }).any() as unknown[]).length, 1, 'the limit is an option')
  decodeError(
    t,
    () => decodeMessage((r) => r.int32(), bytes('02 01 00 00 00')),
    'unsupported binary format version 2 (this reader knows 1)',
  )
  decodeError(
    t,
    () => decodeMessage((r) => r.int32(), bytes('01 01 00 00 00 00')),
    '1 trailing bytes after the message at offset 5',
  )
  decodeError(t, () => decodeMessage((r) => r.int32(), 'x' as unknown as Uint8Array), 'expected a Uint8Array')
  // the offset of a failure is on the error
  try {
    new BinaryReader(bytes('00 00 00 00 05')).int32() && new BinaryReader(bytes('01 02 03 04 07')).bool()
  } catch {}
  const r = new BinaryReader(bytes('01 00 00 00 07'))
  r.int32()
  try {
    r.bool()
  } catch (err) {
    t.equal((err as DecodeError).offset, 4)
  }
})

t.test('models: length-prefixed, reads bounded by the model, unknown tail skipped', async (t) => {
  // model { int32 } with 3 extra bytes a newer writer appended, then a trailing int32 outside
  const r = new BinaryReader(bytes('07 00 00 00 2a 00 00 00 aa bb cc 05 00 00 00'))
  const outer = r.enterModel()
  t.equal(r.int32(), 42)
  t.equal(r.more(), true)
  r.exitModel(outer)
  t.equal(r.int32(), 5)
  const short = new BinaryReader(bytes('02 00 00 00 2a 00 00 00'))
  short.enterModel()
  decodeError(t, () => short.int32(), 'truncated: needed 4 bytes at offset 4, 2 left')
  decodeError(
    t,
    () => new BinaryReader(bytes('09 00 00 00 00')).enterModel(),
    'length 9 at offset 0 exceeds the 1 bytes left',
  )
})

t.test('encodeMessage: version byte first, scratch buffer reused safely', async (t) => {
  t.equal(FORMAT_VERSION, 1)
  const a = encodeMessage((w, v: number) => w.int32(v), 7)
  t.equal(hex(a), '01 07 00 00 00')
  const nested = encodeMessage((w, v: number) => {
    const inner = encodeMessage((w2, x: number) => w2.int32(x), v + 1)
    w.bytes(inner)
  }, 1)
  t.equal(hex(nested), '01 05 00 00 00 01 02 00 00 00', 'a nested encode gets its own buffer')
  t.equal(hex(a), '01 07 00 00 00', 'earlier results are copies')
  const big = encodeMessage((w, s: string) => w.string(s), 'x'.repeat(100_000))
  t.equal(big.length, 1 + 4 + 100_000)
})

t.test('encodeMessage: pooled results are independent views', async (t) => {
  const enc = (s: string) => encodeMessage((w, v: string) => w.string(v), s)
  const results: Uint8Array[] = []
  const strings: string[] = []
  for (let i = 0; i < 200; i++) {
    const s = `${'m'.repeat(100 + (i % 50) * 7)}${i}` // 100..450 bytes: carved from shared slabs
    strings.push(s)
    results.push(enc(s))
  }
  results[0]!.fill(0xff) // writing to one result leaves the others alone
  let intact = 0
  for (let i = 1; i < results.length; i++) {
    const r = new BinaryReader(results[i]!)
    r.version()
    if (r.string() === strings[i]) intact++
    r.finish()
  }
  t.equal(intact, results.length - 1, 'every message intact after later encodes')
  // A transferred (detached) slab is replaced.
  const a = enc('a'.repeat(200))
  structuredClone(a.buffer, { transfer: [a.buffer] })
  t.equal(a.length, 0, 'detached')
  const b = enc('b'.repeat(200))
  t.equal(b.length, 1 + 4 + 200)
  t.equal(b[5], 0x62)
})

t.test(
  'string: short ASCII cache returns correct strings (collisions, NUL, non-ASCII, bad UTF-8)',
  async (t) => {
    const w = new BinaryWriter(4)
    const strings = ['\0', '-', '', 'a', 'ab', 'é', 'héllo', '日本', '😀']
    for (let i = 0; i < 20_000; i++) strings.push(`k${i}`, `k${i}`, `${i}`.padStart(32, 'z'))
    for (const s of strings) w.string(s)
    const r = new BinaryReader(w.finish())
    for (let i = 0; i < strings.length; i++) {
      if (r.string() !== strings[i]) {
        t.fail(`string ${i} (${JSON.stringify(strings[i])}) read wrong`)
        return
      }
    }
    t.equal(r.remaining, 0)
    t.pass('every string read back')
    const r2 = new BinaryReader(bytes('01 00 00 00 00 01 00 00 00 2d 01 00 00 00 00'))
    t.equal(r2.string(), '\0')
    t.equal(r2.string(), '-')
    t.equal(r2.string(), '\0')
    decodeError(
      t,
      () => new BinaryReader(bytes('02 00 00 00 c3 28')).string(),
      'invalid UTF-8 in string at offset 0',
    )
    decodeError(
      t,
      () => new BinaryReader(bytes('01 00 00 00 80')).string(),
      'invalid UTF-8 in string at offset 0',
    )
  },
)

t.test(
  'int32 from JSON: any integer outside int32 is the 32-bit message, beyond float range too',
  async (t) => {
    const messages = (value: unknown): FieldError[] => {
      const errors: FieldError[] = []
      jInt32(value, errors, '', 'id')
      return errors
    }
    const INT32 = [{ field: 'id', message: 'must be a 32-bit integer' }]
    for (const value of [
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 53,
      1e21,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ])
      t.same(messages(value), INT32, String(value))
    t.same(messages(JSON.parse(`1${'0'.repeat(400)}`)), INT32, 'a 401-digit JSON number')
    for (const value of [1.5, '7', Number.NaN])
      t.same(messages(value), [{ field: 'id', message: 'must be integer' }], String(value))
    t.same(messages(-(2 ** 31)), [])
  },
)
