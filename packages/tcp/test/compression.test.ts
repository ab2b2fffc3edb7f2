// PROTOCOL.md "Compression", TCP frames: the 0x80 flag, its negotiation (PING 0x88 → PONG 0x89), and the
// frame limit applied to the inflated body — over real sockets.
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { encodeMetadata, encodeTcpFrameBody, FRAME_COMPRESSED, FrameType, frameBody } from '@trivium/wire'
import { test } from 'tap'
import { buildApp, dec, requestFrame, TcpClient } from './helpers.js'

const OFFER = encodeTcpFrameBody(FrameType.PING | FRAME_COMPRESSED, 0, new Uint8Array())

/** A REQUEST whose body (name, 0x00, metadata, JSON) is sent compressed. */
function compressedRequest(requestId: number, endpoint: string, json: string): Uint8Array {
  const meta = encodeMetadata({ format: 'json' })
  const model = Buffer.from(json)
  const payload = Buffer.concat([meta, model])
  const body = frameBody({ type: FrameType.REQUEST, requestId, endpoint, payload })
  return encodeTcpFrameBody(FrameType.REQUEST | FRAME_COMPRESSED, requestId, deflateRawSync(body))
}

test('the offer is accepted and large answers come back compressed; small ones plain', async (t) => {
  const { app, port } = await buildApp({ compression: true })
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  t.teardown(() => c.socket.destroy())
  c.write(OFFER)
  const pong = await c.reply(0)
  t.equal(pong?.type, FrameType.PONG, 'PONG')
  t.equal(pong?.compressed, true, 'with the flag: accepted')
  const big = { text: 'task '.repeat(1000) }
  c.write(compressedRequest(1, 'echo', JSON.stringify(big)))
  const answer = await c.reply(1)
  t.equal(answer?.type, FrameType.RESPONSE)
  t.equal(answer?.compressed, true, 'a 5 KB answer is compressed')
  t.ok((answer?.payload.length as number) < 200, `compressed to ${answer?.payload.length} bytes`)
  t.same(dec(inflateRawSync(answer?.payload as Uint8Array)), big)
  c.write(requestFrame(2, 'echo', { text: 'short' }))
  const small = await c.reply(2)
  t.equal(small?.compressed, undefined, 'under the threshold: plain')
  t.same(dec(small?.payload as Uint8Array), { text: 'short' })
})

test('a client that did not offer gets plain frames; a server with compression off answers a plain PONG and refuses compressed frames', async (t) => {
  const on = await buildApp({ compression: true })
  t.teardown(() => on.app.close())
  const c = await TcpClient.open(on.port)
  t.teardown(() => c.socket.destroy())
  const big = { text: 'x'.repeat(5000) }
  c.write(requestFrame(1, 'echo', big))
  const plain = await c.reply(1)
  t.equal(plain?.compressed, undefined, 'no offer: never compressed')
  t.same(dec(plain?.payload as Uint8Array), big)

  const off = await buildApp()
  t.teardown(() => off.app.close())
  const d = await TcpClient.open(off.port)
  t.teardown(() => d.socket.destroy())
  d.write(OFFER)
  const pong = await d.reply(0)
  t.equal(pong?.type, FrameType.PONG)
  t.equal(pong?.compressed, undefined, 'plain PONG: not accepted')
  d.write(compressedRequest(3, 'echo', JSON.stringify(big)))
  const refused = await d.reply(3, FrameType.ERROR)
  t.match(dec(refused?.payload as Uint8Array), {
    statusCode: 400,
    error: 'ValidationException',
    message: 'Compressed frames are not enabled on this server',
  })
  await d.closed
  t.ok(d.ended, 'then closed')
})

test('hostile: a compressed frame whose inflated size exceeds maxFrameBytes is ERROR 413, then close; the server serves on', async (t) => {
  const { app, port } = await buildApp({ compression: true, maxFrameBytes: 64 * 1024 })
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  t.teardown(() => c.socket.destroy())
  // 1 KiB on the wire, 1 MiB once inflated: a deflate bomb against a 64 KiB frame limit.
  const bomb = compressedRequest(5, 'echo', `{"text":"${'a'.repeat(1024 * 1024)}"}`)
  t.ok(bomb.length < 2048, `the bomb is ${bomb.length} bytes`)
  c.write(bomb)
  const err = await c.reply(5, FrameType.ERROR)
  t.same(dec(err?.payload as Uint8Array), {
    statusCode: 413,
    code: 'TRV_PAYLOAD_TOO_LARGE',
    error: 'PayloadTooLargeException',
    message: 'Frame inflates to more than the limit of 65536 bytes',
    requestId: dec(err?.payload as Uint8Array).requestId,
  })
  await c.closed
  t.ok(c.ended, 'the connection is closed')

  // Just under the limit inflates and runs.
  const d = await TcpClient.open(port)
  t.teardown(() => d.socket.destroy())
  const fits = { text: 'b'.repeat(60_000) }
  d.write(compressedRequest(6, 'echo', JSON.stringify(fits)))
  const ok = await d.reply(6)
  t.equal(ok?.type, FrameType.RESPONSE)
  t.same(dec(ok?.payload as Uint8Array), fits)
})

test('hostile: a compressed body that is not raw DEFLATE is ERROR 400, then close', async (t) => {
  const { app, port } = await buildApp({ compression: true })
  t.teardown(() => app.close())
  const c = await TcpClient.open(port)
  t.teardown(() => c.socket.destroy())
  c.write(encodeTcpFrameBody(FrameType.REQUEST | FRAME_COMPRESSED, 7, Buffer.from('not deflate at all')))
  const err = await c.reply(7, FrameType.ERROR)
  t.match(dec(err?.payload as Uint8Array), {
    statusCode: 400,
    error: 'ValidationException',
    message: 'Compressed frame body is not valid deflate data',
  })
  await c.closed
  t.ok(c.ended)
})

test('options: compression is validated at registration', async (t) => {
  await t.rejects(buildApp({ compression: { threshold: -1 } }), {
    message:
      '@trivium/tcp: compression must be true, false or { threshold: <bytes, an integer of at least 0> } (got {"threshold":-1})',
    code: 'TRV_FRAME_SESSION_COMPRESSION',
  })
  await t.rejects(buildApp({ compression: 'gzip' as never }), {
    message: /^@trivium\/tcp: compression must be true, false or \{ threshold/,
    code: 'TRV_FRAME_SESSION_COMPRESSION',
  })
})
