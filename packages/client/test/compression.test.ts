// PROTOCOL.md "Compression", client side: HTTP request bodies gzip-compressed when asked (what goes on
// the wire is checked through the fetch the client calls), options validated with messages naming the fix.
import { gunzipSync } from 'node:zlib'
import { createClient } from '@trivium/client'
import { createClient as createNodeClient } from '@trivium/client/node'
import t from 'tap'
import { endpoints, startServer } from './fixture.js'

const { app, url } = await startServer()
t.teardown(() => app.close())

t.test(
  'compressRequests: bodies over the threshold go gzip with Content-Encoding; small ones plain',
  async (t) => {
    const seen: { encoding: string | undefined; bytes: Uint8Array }[] = []
    const recordingFetch = async (input: string, init: RequestInit & Record<string, unknown>) => {
      const headers = init.headers as Record<string, string>
      const body = init.body as string | Uint8Array | undefined
      seen.push({
        encoding: headers['content-encoding'],
        bytes: typeof body === 'string' ? new TextEncoder().encode(body) : (body ?? new Uint8Array()),
      })
      return fetch(input, init)
    }
    const c = createClient({
      transport: 'http',
      url,
      endpoints,
      format: 'json',
      fetch: recordingFetch,
      compressRequests: { threshold: 100 },
    })
    t.teardown(() => c.close())
    const text = 'compress me '.repeat(100)
    t.same(await c.call('echo', { text }), { text }, 'the server inflates it')
    t.equal(seen[0]?.encoding, 'gzip')
    t.same(JSON.parse(gunzipSync(seen[0]?.bytes as Uint8Array).toString()), { text })
    t.ok(
      (seen[0]?.bytes.length as number) < 200,
      `${seen[0]?.bytes.length} bytes sent for ${text.length + 11}`,
    )
    t.same(await c.call('echo', { text: 'short' }), { text: 'short' })
    t.equal(seen[1]?.encoding, undefined, 'under the threshold: plain')
  },
)

t.test('options are validated', async (t) => {
  t.throws(() => createClient({ transport: 'http', url, endpoints, compressRequests: 'gzip' as never }), {
    message: /compressRequests must be true, false or \{ threshold \}/,
  })
  t.throws(() => createClient({ transport: 'http', url, endpoints, compressRequests: { threshold: -1 } }), {
    message: /compressRequests\.threshold must be an integer of at least 0 \(bytes\)/,
  })
  t.throws(() => createNodeClient({ transport: 'tcp', port: 1, endpoints, compression: 'yes' as never }), {
    message: /compression must be true, false or \{ threshold: <bytes> \}/,
  })
  t.throws(
    () => createNodeClient({ transport: 'tcp', port: 1, endpoints, compression: { threshold: 1.5 } }),
    {
      message: /compression\.threshold must be an integer of at least 0 \(bytes\)/,
    },
  )
  t.throws(
    () =>
      createClient({
        transport: 'websocket',
        url: 'ws://127.0.0.1:1/ws',
        endpoints,
        WebSocket: class {} as never,
        frameCompression: { codec: {} as never },
      }),
    { message: /frameCompression needs a codec with deflate and inflate functions/ },
  )
})
