// Issue 41 item 3: the codegen path and the contract path send the same bytes for the same model. One
// server implements a contract whose schemas are the generated models; a client given the generated
// `endpoints` table and a client given the contract make the same calls, and what each puts on the wire
// is recorded: HTTP (URL and body, binary and JSON) and WebSocket (the REQUEST frame's payload after its
// metadata, which carries the per-call deadline).
import { createClient, type WebSocketConstructor } from '@trivium/client/node'
import triviumCodec from '@trivium/codec'
import { defineContract } from '@trivium/contract'
import triviumCore from '@trivium/core'
import triviumWebSocket from '@trivium/websocket'
import { decodeMetadata, decodeWsFrame, FrameType } from '@trivium/wire'
import Fastify from 'fastify'
import t from 'tap'
import WebSocket from 'ws'
import { Echo, endpoints, Lookup } from '../src/index.js'

const contract = defineContract({
  echo: { method: 'POST', url: '/echo', request: Echo, response: Echo, status: 201 },
  lookup: { method: 'GET', url: '/lookup/:id', request: Lookup, response: Lookup },
})

const app = Fastify()
await app.register(triviumCore)
await app.register(triviumCodec)
await app.register(triviumWebSocket)
app.trivium.implement(contract, { echo: (req) => req, lookup: (req) => req })
await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(() => app.close())
const port = (app.server.address() as { port: number }).port

const echoRequest = {
  text: 'héllo ✓',
  count: -7,
  at: new Date('2026-11-21T12:34:56.789Z'),
  blob: new Uint8Array([0, 1, 255]),
  big: 9007199254740993n,
}
const lookupRequest = { id: 3, limit: 5 }

/** Every request a client of this table sends, as text (HTTP: method, URL, body in hex). */
async function recordHttp(table: { endpoints?: object; contract?: object }, format: 'binary' | 'json') {
  const sent: string[] = []
  const client = createClient({
    transport: 'http',
    url: `http://127.0.0.1:${port}`,
    format,
    ...table,
    fetch: async (url, init) => {
      const body =
        init.body === undefined ? '' : Buffer.from(init.body as Uint8Array | string).toString('hex')
      sent.push(
        `${init.method} ${url} ${String((init.headers as Record<string, string>)['content-type'])} ${body}`,
      )
      return fetch(url, init)
    },
  } as Parameters<typeof createClient>[0])
  const answers = [await client.call('echo', echoRequest), await client.call('lookup', lookupRequest)]
  await client.close()
  return { sent, answers }
}

/** The REQUEST frames' endpoint and model bytes (after the metadata) a WebSocket client sends. */
async function recordWebSocket(table: { endpoints?: object; contract?: object }, format: 'binary' | 'json') {
  const sent: string[] = []
  class Recording extends WebSocket {
    override send(data: Uint8Array, ...rest: never[]): void {
      const frame = decodeWsFrame(new Uint8Array(data))
      if (frame.type === FrameType.REQUEST) {
        const model = Buffer.from(decodeMetadata(frame.payload).rest).toString('hex')
        sent.push(`${frame.endpoint} ${model}`)
      }
      super.send(data, ...rest)
    }
  }
  const client = createClient({
    transport: 'websocket',
    url: `ws://127.0.0.1:${port}/ws`,
    format,
    WebSocket: Recording as unknown as WebSocketConstructor,
    ...table,
  } as Parameters<typeof createClient>[0])
  const answers = [await client.call('echo', echoRequest), await client.call('lookup', lookupRequest)]
  await client.close()
  return { sent, answers }
}

const codegen = { endpoints: { echo: endpoints.echo, lookup: endpoints.lookup } }
for (const format of ['binary', 'json'] as const) {
  for (const [transport, record] of [
    ['http', recordHttp],
    ['websocket', recordWebSocket],
  ] as const) {
    t.test(`${transport}, ${format}: the generated table and the contract send the same bytes`, async (t) => {
      const generated = await record(codegen, format)
      const fromContract = await record({ contract }, format)
      t.equal(generated.sent.length, 2, 'two requests recorded')
      t.same(fromContract.sent, generated.sent)
      t.same(fromContract.answers, generated.answers)
      t.ok(Echo.equalsValue(fromContract.answers[0] as Echo, echoRequest as Echo), 'the echo came back whole')
    })
  }
}
