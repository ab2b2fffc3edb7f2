// A stream item many sessions send (frame-session's shared bytes) is written as one whole frame without
// a copy when it is the turn's only frame; a second frame in the same turn follows it in order, in the
// same write. The bytes on the wire are the same either way.
import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'
import type { EndpointDefinition } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import t, { type Test } from 'tap'
import { encodeItem } from '../../frame-session/src/shared-items.js'
import { TcpCarrier } from '../src/carrier.js'

const definition = { response: { toJSON: (v: unknown) => v } } as unknown as EndpointDefinition

function frame(type: number, id: number, body: string): Buffer {
  const bytes = Buffer.from(body)
  const header = Buffer.alloc(9)
  header.writeUInt32BE(5 + bytes.length, 0)
  header.writeUInt32BE(id, 4)
  header[8] = type
  return Buffer.concat([header, bytes])
}

/** A carrier on the server side of a loopback connection, and what its peer receives. */
async function pair(t: Test): Promise<{ carrier: TcpCarrier; received: () => Buffer }> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const accepted = once(server, 'connection')
  const client = connect((server.address() as { port: number }).port, '127.0.0.1')
  const chunks: Buffer[] = []
  client.on('data', (chunk: Buffer) => chunks.push(chunk))
  const [socket] = (await accepted) as [Socket]
  t.teardown(() => {
    client.destroy()
    socket.destroy()
    server.close()
  })
  const carrier = new TcpCarrier(socket, { maxFrameBytes: 1 << 20, partialFrameTimeoutMs: 1000 })
  return { carrier, received: () => Buffer.concat(chunks) }
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5))
}

t.test('a shared item alone, then with another frame after it in the same turn', async (t) => {
  const { carrier, received } = await pair(t)
  const shared = encodeItem(definition, jsonFormat, Object.freeze({ n: 1 }))
  carrier.sendBody(4, 2, shared)
  t.equal(carrier.backlog, 9 + shared.length, 'the waiting shared frame counts in the backlog')
  const alone = frame(4, 2, '{"n":1}')
  await until(() => received().length >= alone.length)
  t.same(received(), alone)

  carrier.sendBody(4, 2, shared)
  carrier.sendBody(2, 7, new TextEncoder().encode('{"ok":true}'))
  const both = Buffer.concat([alone, frame(4, 2, '{"n":1}'), frame(2, 7, '{"ok":true}')])
  await until(() => received().length >= both.length)
  t.same(received(), both)
})
