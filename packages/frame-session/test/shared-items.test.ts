// A frozen stream item is encoded once per response model and format and its bytes shared by every
// session that sends it (an event fanned out to many subscribers); an item that is not frozen is
// encoded for each send, so one changed between sends goes out as it is then. What carriers make of a
// shared body per session (its frame for a stream id, its deflated form) is made once and shared too.

import { inflateRawSync } from 'node:zlib'
import type { EndpointDefinition } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import { FRAME_COMPRESSED, type Frame, FrameType } from '@trivium/wire'
import t from 'tap'
import type { FrameCarrier } from '../src/carrier.js'
import { SessionCompression } from '../src/compression.js'
import { encodeItem, isSharedBody, SharedFrames } from '../src/shared-items.js'

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

t.test(
  "a shared body's frame is made once per type and stream id; other bodies are framed per send",
  async (t) => {
    let built = 0
    const frames = new SharedFrames((type, id, body) => {
      built++
      return Buffer.concat([Buffer.of(type, id), Buffer.from(body as Uint8Array)])
    }, 2)
    const body = encodeItem(definition, jsonFormat, Object.freeze({ id: 3 }))
    t.equal(isSharedBody(body), true)
    const first = frames.frame(4, 2, body)
    t.same([...first], [4, 2, ...Buffer.from('{"id":3}')])
    t.equal(frames.frame(4, 2, body), first, 'the same frame for another session with the same id')
    const otherId = frames.frame(4, 7, body)
    t.same([...otherId], [4, 7, ...Buffer.from('{"id":3}')])
    t.equal(frames.frame(4, 7, body), otherId)
    t.not(frames.frame(4, 9, body), frames.frame(4, 9, body), 'past maxIds ids, framed per send')
    t.equal(built, 4)
    const own = new Uint8Array([1, 2])
    t.equal(isSharedBody(own), false)
    t.not(frames.frame(4, 2, own), frames.frame(4, 2, own), 'a body not shared: a frame per send')
    t.equal(isSharedBody('text'), false)
  },
)

t.test(
  'a shared body is deflated once for every compressing session, and the result is shared',
  async (t) => {
    const sent: [number, Uint8Array | string][] = []
    const carrier = {
      sendBody: (type: number, _id: number, body: Uint8Array | string) => sent.push([type, body]),
    } as unknown as FrameCarrier
    const sessions = [new SessionCompression(carrier, 16), new SessionCompression(carrier, 16)]
    for (const session of sessions)
      session.answerOffer({ type: FrameType.PING | FRAME_COMPRESSED, requestId: 0 } as Frame)
    sent.length = 0
    const body = encodeItem(definition, jsonFormat, Object.freeze({ text: 'x'.repeat(200) }))
    for (const session of sessions) session.send(FrameType.STREAM_ITEM, 2, body)
    t.equal(sent.length, 2)
    t.equal(sent[0]?.[0], FrameType.STREAM_ITEM | FRAME_COMPRESSED)
    t.equal(sent[1]?.[1], sent[0]?.[1], 'the same deflated bytes for both')
    t.equal(isSharedBody(sent[0]?.[1] as Uint8Array), true)
    t.equal(inflateRawSync(sent[0]?.[1] as Uint8Array).toString(), `{"text":"${'x'.repeat(200)}"}`)
    const own = Buffer.from(`{"text":"${'y'.repeat(200)}"}`)
    sessions[0]?.send(FrameType.STREAM_ITEM, 2, own)
    sessions[1]?.send(FrameType.STREAM_ITEM, 2, own)
    t.not(sent[3]?.[1], sent[2]?.[1], 'a body not shared is deflated per send')
    t.equal(isSharedBody(sent[2]?.[1] as Uint8Array), false)
  },
)
