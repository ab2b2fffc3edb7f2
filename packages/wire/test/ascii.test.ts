// Short ASCII text is decoded without TextDecoder; everything else must still reach the strict decoders
// (invalid UTF-8 refused, text past 64 bytes, non-ASCII text), with the same strings as TextDecoder.
import { decodeMetadata, encodeMetadata, SHORT_ASCII_BYTES, shortAscii } from '@trivium/wire'
import t from 'tap'

const utf8 = new TextEncoder()

t.test('shortAscii: the same string as TextDecoder for ASCII up to 64 bytes, a sub-range too', async (t) => {
  t.equal(SHORT_ASCII_BYTES, 64)
  t.equal(shortAscii(new Uint8Array(0)), '')
  t.equal(shortAscii(utf8.encode('{}')), '{}')
  const all = Uint8Array.from({ length: 64 }, (_, i) => i * 2) // 0x00..0x7e, control characters included
  t.equal(shortAscii(all), new TextDecoder().decode(all))
  const framed = utf8.encode('xx{"id":42}yy')
  t.equal(shortAscii(framed, 2, 11), '{"id":42}')
  // The arrays behind it are reused: a shorter text after a longer one of the same length class is exact.
  t.equal(shortAscii(utf8.encode('abcdef')), 'abcdef')
  t.equal(shortAscii(utf8.encode('xyz')), 'xyz')
})

t.test('shortAscii: undefined for any byte ≥ 0x80 and for more than 64 bytes', async (t) => {
  t.equal(shortAscii(utf8.encode('é')), undefined, 'valid UTF-8, not ASCII')
  t.equal(shortAscii(Uint8Array.of(0x7b, 0xff, 0x7d)), undefined, 'invalid UTF-8')
  t.equal(shortAscii(utf8.encode('\uFEFF{}')), undefined, 'a BOM is left to the strict decoder')
  t.equal(shortAscii(new Uint8Array(65).fill(0x61)), undefined)
})

t.test('metadata: short ASCII values, long values and invalid UTF-8 as before', async (t) => {
  const token = 'a'.repeat(300)
  const { metadata } = decodeMetadata(
    encodeMetadata({ format: 'json', authorization: `Bearer ${token}`, é: 'ü' }),
  )
  t.same({ ...metadata }, { format: 'json', authorization: `Bearer ${token}`, é: 'ü' })
  const bad = Uint8Array.of(1, 0, 0, 0, 1, 0, 0, 0, 0x6b, 2, 0, 0, 0, 0x61, 0xff)
  t.throws(() => decodeMetadata(bad), {
    code: 'TRV_FRAME_MALFORMED',
    message: 'Malformed metadata: value is not valid UTF-8',
  })
})
