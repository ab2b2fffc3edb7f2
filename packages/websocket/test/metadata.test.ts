// `metadata=1` (PROTOCOL.md "WebSocket"): every REQUEST payload of the connection starts with a metadata
// block, as on TCP, which middleware sees as `call.metadata`; the token and format stay the connection's.
import { request as httpRequest } from 'node:http'
import { encodeMetadata, FrameType } from '@trivium/wire'
import t from 'tap'
import { buildApp, Client, dec, enc } from './helpers.ts'

function withMetadata(meta: Record<string, string>, body: unknown): Uint8Array {
  const block = encodeMetadata(meta)
  const model = enc(body)
  const out = new Uint8Array(block.length + model.length)
  out.set(block)
  out.set(model, block.length)
  return out
}

t.test('metadata=1: the block is read into call.metadata, the rest is the model', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const client = await Client.open(`${url}?format=json&metadata=1&token=u7`)
  t.teardown(() => client.ws.close())
  const send = (requestId: number, payload: Uint8Array) =>
    client.send({ type: FrameType.REQUEST, requestId, endpoint: 'meta', payload })
  send(1, withMetadata({ idempotency_key: 'k-1', auth_token: 'u9' }, { a: 1 }))
  send(2, withMetadata({}, { a: 2 }))
  send(3, new Uint8Array([1, 0, 0])) // a block that ends early
  const frames = await client.until((f) => f.length >= 3)
  const byId = new Map(frames.map((f) => [f.requestId, f]))
  t.same(dec(byId.get(1)?.payload as Uint8Array), {
    body: { a: 1 },
    metadata: { idempotency_key: 'k-1', auth_token: 'u9' },
    user: 7, // the connection's token, not the metadata's
  })
  t.same(dec(byId.get(2)?.payload as Uint8Array), { body: { a: 2 }, metadata: {}, user: 7 })
  t.equal(byId.get(3)?.type, FrameType.ERROR)
  t.match(dec(byId.get(3)?.payload as Uint8Array), { statusCode: 400, code: 'TRV_VALIDATION' })
})

t.test('without metadata=1 the payload is the model; another value is refused at the upgrade', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const client = await Client.open(`${url}?format=json`)
  t.teardown(() => client.ws.close())
  client.request(1, 'echo', { plain: true })
  const [frame] = await client.until((f) => f.length >= 1)
  t.same(dec(frame?.payload as Uint8Array), { plain: true })

  const res = await new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const req = httpRequest(
      `${url.replace('ws:', 'http:')}?metadata=yes`,
      {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          'sec-websocket-version': '13',
        },
      },
      (r) => {
        let text = ''
        r.on('data', (c) => {
          text += c
        })
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(text) }))
      },
    )
    req.on('error', reject)
    req.end()
  })
  t.equal(res.status, 400)
  t.match(res.body, {
    statusCode: 400,
    code: 'TRV_VALIDATION',
    error: 'ValidationException',
    message: 'Invalid metadata query parameter: the only value is 1',
  })
})
