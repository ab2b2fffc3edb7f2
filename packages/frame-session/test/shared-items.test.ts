// A frozen stream item is encoded once per response model and format and its bytes shared by every
// session that sends it (an event fanned out to many subscribers); an item that is not frozen is
// encoded for each send, so one changed between sends goes out as it is then.

import type { EndpointDefinition } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import t from 'tap'
import { encodeItem } from '../src/shared-items.js'

let encodes = 0
const model = {
  fromJSON: (v: unknown) => v,
  toJSON: (v: unknown) => {
    encodes++
    return v
  },
}
const definition = { response: model } as unknown as EndpointDefinition
const otherModel = { ...model }
const other = { response: otherModel } as unknown as EndpointDefinition

t.test('a frozen item: one encoding per model and format, the same bytes for every send', async (t) => {
  encodes = 0
  const item = Object.freeze({ id: 1, title: 'a' })
  const first = encodeItem(definition, jsonFormat, item)
  t.equal(encodeItem(definition, jsonFormat, item), first)
  t.equal(Buffer.from(first).toString(), '{"id":1,"title":"a"}')
  const byOther = encodeItem(other, jsonFormat, item)
  t.not(byOther, first, 'another model encodes it again')
  t.equal(encodeItem(definition, jsonFormat, item), first)
  t.equal(encodeItem(other, jsonFormat, item), byOther)
  t.equal(encodes, 2)
})

t.test('an item that is not frozen is encoded for each send', async (t) => {
  encodes = 0
  const item = { id: 2, title: 'b' }
  t.equal(Buffer.from(encodeItem(definition, jsonFormat, item)).toString(), '{"id":2,"title":"b"}')
  item.title = 'c'
  t.equal(Buffer.from(encodeItem(definition, jsonFormat, item)).toString(), '{"id":2,"title":"c"}')
  t.equal(encodes, 2)
})
