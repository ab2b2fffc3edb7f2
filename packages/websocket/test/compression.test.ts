// PROTOCOL.md "Compression", WebSocket: permessage-deflate offered by the server as an option, maxPayload
// bounding the inflated message (a deflate bomb closes with 1009, the server serves on) — real sockets.
import type { Socket } from 'node:net'
import { FrameType } from '@trivium/wire'
import { test } from 'tap'
import WebSocket from 'ws'
import { buildApp, Client, dec } from './helpers.js'

/** Bytes the server wrote on its sockets (what went over the wire). */
function wireCounter(server: import('node:http').Server): () => number {
  const sockets: Socket[] = []
  server.on('connection', (socket: Socket) => sockets.push(socket))
  return () => sockets.reduce((n, s) => n + s.bytesWritten, 0)
}

test('perMessageDeflate: negotiated with a client that offers it; large messages go compressed', async (t) => {
  const { app, url } = await buildApp({ perMessageDeflate: true })
  t.teardown(() => app.close())
  const written = wireCounter(app.server)
  const c = await Client.open(url)
  t.teardown(() => c.ws.close())
  t.match(c.ws.extensions, /^permessage-deflate/, 'the extension is accepted')
  const big = { text: 'task title and description '.repeat(400) }
  const before = written()
  c.request(1, 'echo', big)
  const answer = await c.reply(1)
  t.equal(answer?.type, FrameType.RESPONSE)
  t.same(dec(answer?.payload as Uint8Array), big)
  const sent = written() - before
  t.ok(sent < 1000, `${sent} bytes on the wire for a ${JSON.stringify(big).length}-byte answer`)

  // A client that does not offer it gets plain messages from the same server.
  const plain = new Client(new WebSocket(url, { perMessageDeflate: false }))
  await new Promise((resolve) => plain.ws.once('open', resolve))
  t.teardown(() => plain.ws.close())
  t.equal(plain.ws.extensions, '')
  const before2 = written()
  plain.request(2, 'echo', big)
  t.same(dec((await plain.reply(2))?.payload as Uint8Array), big)
  t.ok(written() - before2 > JSON.stringify(big).length, 'uncompressed')
})

test('perMessageDeflate is off by default: the offer is declined', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const c = await Client.open(url)
  t.teardown(() => c.ws.close())
  t.equal(c.ws.extensions, '')
})

test('hostile: a deflate bomb (16 MiB inflated, ~16 KiB sent) closes with 1009; the server serves on', async (t) => {
  const { app, url } = await buildApp({ perMessageDeflate: true, maxPayload: 64 * 1024 })
  t.teardown(() => app.close())
  const written = wireCounter(app.server)
  const bomber = await Client.open(url)
  const bomb = new Uint8Array(16 * 1024 * 1024)
  bomb.set([FrameType.REQUEST, 0, 0, 0, 1, 0x65, 0x63, 0x68, 0x6f, 0]) // REQUEST id 1 to "echo"
  bomber.ws.send(bomb, { compress: true })
  await bomber.closed
  t.equal(bomber.closeCode, 1009, 'closed with 1009')
  t.ok(written() < 4096, 'nothing but the handshake and the close went back')
  const next = await Client.open(url)
  t.teardown(() => next.ws.close())
  next.request(3, 'echo', { ok: true })
  t.same(dec((await next.reply(3))?.payload as Uint8Array), { ok: true })
})

test('options: perMessageDeflate validated; the frame flag is not a WebSocket option', async (t) => {
  await t.rejects(buildApp({ perMessageDeflate: 'yes' as never }), {
    message: '@trivium/websocket: perMessageDeflate must be true, false or { threshold: <bytes> }',
    code: 'TRV_WEBSOCKET_PER_MESSAGE_DEFLATE',
  })
  await t.rejects(buildApp({ perMessageDeflate: { threshold: -1 } }), {
    message: '@trivium/websocket: perMessageDeflate.threshold must be an integer of at least 0 (got -1)',
    code: 'TRV_FRAME_SESSION_INTEGER',
  })
  // @ts-expect-error: WebSocket's options type takes no frame compression (a JavaScript caller is refused here)
  await t.rejects(buildApp({ compression: true }), {
    message:
      '@trivium/websocket: compression is the TCP frame flag; on WebSocket use perMessageDeflate: true (PROTOCOL.md "Compression")',
    code: 'TRV_WEBSOCKET_COMPRESSION',
  })
})
