// Every reply goes through `ws.send` (issue 31: no write under ws to its socket): the bytes on the wire
// are ws's framing of a final binary message, several replies of one turn in one corked write. With
// permessage-deflate negotiated, they are compressed (RSV1 set).
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { constants, inflateRawSync } from 'node:zlib'
import websocketPlugin from '@fastify/websocket'
import triviumCore from '@trivium/core'
import triviumWebSocket from '@trivium/websocket'
import { encodeWsFrame, FrameType } from '@trivium/wire'
import Fastify from 'fastify'
import t from 'tap'
import * as wsModule from 'ws'
import { waitBound } from '../../../scripts/test/waits.js'

/** ws's frame builder (exported by ws, not declared by @types/ws). */
const { Sender } = wsModule as unknown as {
  Sender: { frame(data: { length: number }, options: object): Buffer[] }
}

/** ws's own framing of a final, unmasked binary message (what the server wrote before). */
function wsFraming(data: { length: number }): Buffer {
  const [header] = Sender.frame(
    data as Buffer,
    {
      fin: true,
      opcode: 2,
      mask: false,
      readOnly: false,
      rsv1: false,
    } as never,
  ) as Buffer[]
  return header as Buffer
}

async function app(options: { deflate?: boolean } = {}) {
  const app = Fastify({ logger: false })
  await app.register(triviumCore, { bodyLimit: 2 * 1024 * 1024 })
  if (options.deflate) {
    await app.register(websocketPlugin, { options: { perMessageDeflate: { threshold: 0 } } })
  }
  await app.register(triviumWebSocket)
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  return { app, port: typeof address === 'object' && address ? address.port : 0 }
}

/** A WebSocket client on a raw socket: the bytes the server writes, unparsed. */
async function rawClient(
  port: number,
  extensions?: string,
): Promise<{ socket: Socket; bytes: () => Buffer }> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const key = randomBytes(16).toString('base64')
  socket.write(
    'GET /ws?format=json HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
      (extensions ? `Sec-WebSocket-Extensions: ${extensions}\r\n` : '') +
      '\r\n',
  )
  let received = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
  })
  const deadline = Date.now() + waitBound(3000)
  while (!received.includes('\r\n\r\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  const end = received.indexOf('\r\n\r\n') + 4
  const head = received.subarray(0, end).toString()
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`upgrade refused: ${head}`)
  const start = end
  return { socket, bytes: () => received.subarray(start) }
}

/** A masked client frame (binary, final) carrying `message`. */
function clientFrame(message: Uint8Array): Buffer {
  const [header, data] = Sender.frame(Buffer.from(message), {
    fin: true,
    opcode: 2,
    mask: true,
    readOnly: false,
    rsv1: false,
  })
  return Buffer.concat(data ? [header as Buffer, data] : [header as Buffer])
}

async function until(pred: () => boolean): Promise<void> {
  const deadline = Date.now() + waitBound(3000)
  while (!pred() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
}

t.test('replies are byte for byte what ws.send would write, in every length class', async (t) => {
  const { app: server, port } = await app()
  t.teardown(() => server.close())
  const { socket, bytes } = await rawClient(port)
  t.teardown(() => socket.destroy())
  // JSON texts whose echo is the same text: replies of 5+17, ~200 B, 65 530 + 5 B (16-bit length,
  // the largest) and ~70 kB (64-bit length).
  const bodies = [
    '{"hello":"world"}',
    JSON.stringify({ s: 'x'.repeat(200) }),
    JSON.stringify({ s: 'y'.repeat(65530 - 8) }),
    JSON.stringify({ s: 'z'.repeat(70_000) }),
  ]
  const expected: Buffer[] = []
  bodies.forEach((text, i) => {
    const payload = new TextEncoder().encode(text)
    socket.write(
      clientFrame(encodeWsFrame({ type: FrameType.REQUEST, requestId: i + 1, endpoint: 'echo', payload })),
    )
    const message = encodeWsFrame({ type: FrameType.RESPONSE, requestId: i + 1, payload })
    expected.push(wsFraming(message), Buffer.from(message))
  })
  t.equal(wsFraming({ length: 5 + 65530 }).length, 4, 'the third reply has a 16-bit length')
  const all = Buffer.concat(expected)
  await until(() => bytes().length >= all.length)
  t.equal(bytes().length, all.length, 'nothing more, nothing less')
  t.ok(bytes().equals(all), 'same bytes as ws framing')
  // PING → PONG (sendBody with an empty body): 2-byte header + 5 bytes.
  const before = bytes().length
  socket.write(clientFrame(encodeWsFrame({ type: FrameType.PING, requestId: 9, payload: new Uint8Array() })))
  await until(() => bytes().length >= before + 7)
  t.same([...bytes().subarray(before)], [0x82, 5, FrameType.PONG, 0, 0, 0, 9])
})

t.test('with permessage-deflate negotiated, replies go through ws (compressed)', async (t) => {
  const { app: server, port } = await app({ deflate: true })
  t.teardown(() => server.close())
  const { socket, bytes } = await rawClient(port, 'permessage-deflate; client_max_window_bits')
  t.teardown(() => socket.destroy())
  const payload = new TextEncoder().encode('{"hello":"world"}')
  socket.write(
    clientFrame(encodeWsFrame({ type: FrameType.REQUEST, requestId: 1, endpoint: 'echo', payload })),
  )
  await until(() => bytes().length >= 2 && bytes().length >= 2 + ((bytes()[1] as number) & 0x7f))
  const got = bytes()
  t.equal(got[0], 0xc2, 'FIN, RSV1 (compressed), binary')
  const length = (got[1] as number) & 0x7f
  t.ok(length < 126)
  const message = inflateRawSync(
    Buffer.concat([got.subarray(2, 2 + length), Buffer.from([0, 0, 0xff, 0xff])]),
    {
      finishFlush: constants.Z_SYNC_FLUSH,
    },
  )
  t.ok(message.equals(Buffer.from(encodeWsFrame({ type: FrameType.RESPONSE, requestId: 1, payload }))))
})
