import { DecodeError } from '@trivium/codec/runtime'
import t from 'tap'
import * as v1 from './generated/v1/models.js'
import * as v2 from './generated/v2/models.js'

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ')

t.test('old writer → new reader: fields the writer did not know are null', async (t) => {
  const old = new v1.Order({
    id: 7n,
    items: [new v1.Item({ sku: 'a', qty: 1 }), new v1.Item({ sku: 'b', qty: 2 })],
    customer: 'c',
  })
  const bytes = v1.Order.encode(old)
  const read = v2.Order.decode(bytes)
  t.equal(read.id, 7n)
  t.equal(read.customer, 'c')
  t.equal(read.coupon, null)
  t.equal(read.shippedAt, null)
  t.equal(read.extra, null)
  t.equal(read.history, null)
  t.equal(read.items[1]!.sku, 'b')
  t.equal(read.items[1]!.note, null, 'also inside nested models')
  t.equal(read.items[1]!.giftWrap, null)
})

t.test('new writer → old reader: data the reader does not know is skipped', async (t) => {
  const now = new v2.Order({
    id: 8n,
    items: [new v2.Item({ sku: 'a', qty: 1, note: 'fragile', giftWrap: true })],
    customer: 'd',
    coupon: 'SAVE',
    shippedAt: new Date(1000),
    extra: { deep: [1, { x: 'y' }] },
    history: [new v2.Item({ sku: 'old', qty: 9 })],
  })
  const read = v1.Order.decode(v2.Order.encode(now))
  t.ok(read.equals(new v1.Order({ id: 8n, items: [new v1.Item({ sku: 'a', qty: 1 })], customer: 'd' })))
  // and through JSON: an old reader ignores unknown fields
  t.ok(v1.Order.fromJSON(JSON.parse(JSON.stringify(now))).equals(read))
})

t.test('byte-level: v1 Item vs v2 Item', async (t) => {
  t.equal(hex(v1.Item.encode({ sku: 'a', qty: 1 })), '01 09 00 00 00 01 00 00 00 61 01 00 00 00')
  t.equal(
    hex(v2.Item.encode({ sku: 'a', qty: 1, note: 'n', giftWrap: false })),
    '01 11 00 00 00 01 00 00 00 61 01 00 00 00 01 01 00 00 00 6e 01 00',
  )
  // a v2 writer's null tail still has the markers: old readers skip them, new readers read null
  t.equal(hex(v2.Item.encode({ sku: 'a', qty: 1 })), '01 0b 00 00 00 01 00 00 00 61 01 00 00 00 00 00')
})

t.test('a required field a writer did not send is a DecodeError, not garbage', async (t) => {
  // v1 Item has two required fields; a model holding only `sku` ends before `qty`.
  const bytes = new Uint8Array(Buffer.from('01 05 00 00 00 01 00 00 00 61'.replace(/ /g, ''), 'hex'))
  t.throws(() => v1.Item.decode(bytes), new DecodeError('truncated: needed 4 bytes at offset 10, 0 left', 10))
})
