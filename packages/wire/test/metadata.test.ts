import { decodeMetadata, encodeMetadata, FrameError, MAX_METADATA_ENTRIES } from '@trivium/wire'
import t from 'tap'

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ')
const bytes = (h: string): Uint8Array =>
  new Uint8Array(
    h
      .split(/\s+/)
      .filter(Boolean)
      .map((x) => Number.parseInt(x, 16)),
  )

t.test('metadata encodes as the binary map<string, string>', async (t) => {
  t.equal(hex(encodeMetadata({})), '00 00 00 00')
  t.equal(hex(encodeMetadata({ a: 'xy' })), '01 00 00 00 01 00 00 00 61 02 00 00 00 78 79')
  const enc = encodeMetadata({ auth_token: 'tök', format: 'json' })
  const withRest = new Uint8Array(enc.length + 2)
  withRest.set(enc)
  withRest.set([9, 8], enc.length)
  const { metadata, rest } = decodeMetadata(withRest)
  t.same({ ...metadata }, { auth_token: 'tök', format: 'json' })
  t.equal(Object.getPrototypeOf(metadata), null)
  t.same(Array.from(rest), [9, 8])
  const empty = decodeMetadata(new Uint8Array(0))
  t.same({ ...empty.metadata }, {})
  t.equal(empty.rest.length, 0)
  const proto = decodeMetadata(encodeMetadata(JSON.parse('{"__proto__":"x"}')))
  t.equal(Object.getOwnPropertyDescriptor(proto.metadata, '__proto__')?.value, 'x')
  t.equal(({} as Record<string, unknown>).x, undefined)
})

t.test('malformed metadata', async (t) => {
  const bad: Array<[string, RegExp]> = [
    ['01 00', /truncated entry count/],
    ['01 00 00 00', /truncated key length/],
    ['01 00 00 00 05 00 00 00 61', /key length 5 runs past the end/],
    ['01 00 00 00 01 00 00 00 61', /truncated value length/],
    ['01 00 00 00 01 00 00 00 61 ff ff ff ff', /value length 4294967295 runs past the end/],
    ['01 00 00 00 01 00 00 00 ff 00 00 00 00', /key is not valid UTF-8/],
    ['02 00 00 00 01 00 00 00 61 00 00 00 00 01 00 00 00 61 00 00 00 00', /repeated key "a"/],
    ['ff ff ff ff', /more than 64 entries/],
  ]
  for (const [h, msg] of bad) {
    t.throws(() => decodeMetadata(bytes(h)), { code: 'TRV_FRAME_MALFORMED', message: msg }, h)
    try {
      decodeMetadata(bytes(h))
    } catch (err) {
      t.ok(err instanceof FrameError)
    }
  }
  const many: Record<string, string> = {}
  for (let i = 0; i <= MAX_METADATA_ENTRIES; i++) many[`k${i}`] = 'v'
  t.throws(() => encodeMetadata(many), { code: 'TRV_FRAME_MALFORMED' })
  t.throws(() => encodeMetadata({ a: 1 as unknown as string }), { code: 'TRV_FRAME_MALFORMED' })
})
