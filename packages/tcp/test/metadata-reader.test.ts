// MetadataReader: a connection's repeated metadata block is reused, never wrongly (PROTOCOL.md "TCP").
import { encodeMetadata } from '@trivium/wire'
import t from 'tap'
import { METADATA_MEMO_MAX_BYTES, MetadataReader } from '../src/metadata-reader.js'

function frame(meta: Record<string, string>, body: string): Uint8Array {
  const m = encodeMetadata(meta)
  const out = new Uint8Array(m.length + body.length)
  out.set(m)
  out.set(new TextEncoder().encode(body), m.length)
  return out
}
const text = (b: Uint8Array): string => new TextDecoder().decode(b)

t.test('the same block twice: equal maps, each call its own, the model bytes after it', async (t) => {
  const reader = new MetadataReader()
  const token = 'x'.repeat(300)
  const first = reader.read(frame({ auth_token: token, format: 'json' }, '{"a":1}'))
  const second = reader.read(frame({ auth_token: token, format: 'json' }, '{"b":22}'))
  t.same({ ...second.metadata }, { auth_token: token, format: 'json' })
  t.equal(Object.getPrototypeOf(second.metadata), null)
  t.equal(text(first.payload), '{"a":1}')
  t.equal(text(second.payload), '{"b":22}')
  t.not(first.metadata, second.metadata, 'a map per call')
  second.metadata.extra = 'handler wrote this'
  const third = reader.read(frame({ auth_token: token, format: 'json' }, ''))
  t.same({ ...third.metadata }, { auth_token: token, format: 'json' }, "a call's changes stay in its map")
  t.equal(third.payload.length, 0)
})

t.test('the remembered block is a copy: reusing the input buffer cannot change it', async (t) => {
  const reader = new MetadataReader()
  const buffer = frame({ auth_token: 'aaaa' }, '{}')
  reader.read(buffer)
  // The socket buffer is reused for another connection's token of the same length.
  buffer.set(new TextEncoder().encode('bbbb'), buffer.length - 2 - 4)
  t.same({ ...reader.read(buffer).metadata }, { auth_token: 'bbbb' })
  t.same({ ...reader.read(frame({ auth_token: 'aaaa' }, '{}')).metadata }, { auth_token: 'aaaa' })
})

t.test('a block that differs in any byte, or is shorter, is decoded again', async (t) => {
  const reader = new MetadataReader()
  reader.read(frame({ auth_token: 'token-1', format: 'json' }, '{}'))
  t.same(
    { ...reader.read(frame({ auth_token: 'token-2', format: 'json' }, '{}')).metadata },
    {
      auth_token: 'token-2',
      format: 'json',
    },
  )
  t.same({ ...reader.read(frame({ auth_token: 'token-2' }, '{}')).metadata }, { auth_token: 'token-2' })
  t.same({ ...reader.read(frame({}, '{}')).metadata }, {})
  const empty = reader.read(new Uint8Array(0))
  t.same({ ...empty.metadata }, {})
  t.equal(empty.payload.length, 0)
})

t.test('malformed metadata after a good block still throws (nothing remembered from it)', async (t) => {
  const reader = new MetadataReader()
  const good = frame({ a: 'b' }, '')
  reader.read(good)
  const twice = new Uint8Array([2, 0, 0, 0, 1, 0, 0, 0, 0x61, 1, 0, 0, 0, 0x62, 1, 0, 0, 0, 0x61, 0, 0, 0, 0])
  t.throws(() => reader.read(twice), {
    code: 'TRV_FRAME_MALFORMED',
    message: 'Malformed metadata: repeated key "a"',
  })
  t.throws(() => reader.read(twice), { code: 'TRV_FRAME_MALFORMED' }, 'the bad block is not remembered')
  t.same({ ...reader.read(good).metadata }, { a: 'b' })
})

t.test(`a block over ${METADATA_MEMO_MAX_BYTES} bytes is decoded every time, and right`, async (t) => {
  const reader = new MetadataReader()
  const big = 'y'.repeat(METADATA_MEMO_MAX_BYTES)
  t.equal(reader.read(frame({ auth_token: big }, '{}')).metadata.auth_token, big)
  t.equal(reader.read(frame({ auth_token: big }, '{}')).metadata.auth_token, big)
})

t.test('forget (an idle connection): the next block is decoded again, to the same maps', async (t) => {
  const reader = new MetadataReader()
  const meta = { auth_token: 'z'.repeat(300), format: 'json' }
  t.same({ ...reader.read(frame(meta, '{}')).metadata }, meta)
  reader.forget()
  reader.forget()
  const again = reader.read(frame(meta, '{"c":3}'))
  t.same({ ...again.metadata }, meta)
  t.equal(text(again.payload), '{"c":3}')
  t.same({ ...reader.read(frame(meta, '')).metadata }, meta, 'remembered again after the decode')
  reader.forget()
  t.same({ ...reader.read(frame({ a: 'b' }, '')).metadata }, { a: 'b' })
})

t.test('the format and the credential come with the parts, remembered with the block', async (t) => {
  const reader = new MetadataReader()
  const token = 'x'.repeat(300)
  for (const round of ['decoded', 'remembered']) {
    const parts = reader.read(frame({ auth_token: token, format: 'json' }, '{}'))
    t.equal(parts.formatName, 'json', round)
    t.equal(parts.credential, token, round)
  }
  for (const round of ['decoded', 'remembered']) {
    const parts = reader.read(frame({ format: 'binary' }, '{}'))
    t.equal(parts.formatName, 'binary', round)
    t.equal(parts.credential, null, `${round}: no credential`)
  }
  // An empty token is none, as core's metadataCredential reads it.
  t.equal(reader.read(frame({ auth_token: '' }, '')).credential, null)
  t.equal(reader.read(frame({ auth_token: '' }, '')).credential, null)
  const none = reader.read(frame({}, '{}'))
  t.equal(none.formatName, undefined)
  t.equal(none.credential, null)
  reader.read(frame({ auth_token: 'short' }, ''))
  reader.forget()
  const after = reader.read(frame({ format: 'json' }, ''))
  t.equal(after.credential, null, 'nothing of the forgotten block is kept')
  t.equal(after.formatName, 'json')
})

t.test("the block's timeout_ms comes with the parts, remembered with the block", async (t) => {
  const reader = new MetadataReader()
  for (const round of ['decoded', 'remembered']) {
    t.equal(reader.read(frame({ format: 'json', timeout_ms: '250' }, '{}')).timeout, '250', round)
  }
  for (const round of ['decoded', 'remembered']) {
    t.equal(reader.read(frame({ format: 'json' }, '{}')).timeout, null, `${round}: none`)
  }
  // Passed on as sent: core's deadline refuses an invalid one as it refuses it in the map.
  t.equal(reader.read(frame({ timeout_ms: 'soon' }, '')).timeout, 'soon')
  reader.read(frame({ timeout_ms: '5' }, ''))
  reader.forget()
  t.equal(reader.read(frame({ a: 'b' }, '')).timeout, null, 'nothing of the forgotten block is kept')
})
