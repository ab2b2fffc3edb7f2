// Issue 44 item 11: the demo compresses by default (threshold 1 KiB) on HTTP and TCP, and COMPRESSION=off
// turns it off for deployments behind a proxy that compresses. Real sockets: raw HTTP requests (no fetch,
// which would inflate silently) and a raw TCP connection that offers compression.
import { request } from 'node:http'
import { connect } from 'node:net'
import { gunzipSync } from 'node:zlib'
import t, { type Test } from 'tap'
import { loadConfig } from '../dist/config.js'
import { registerAndLogin, startDemo } from './helpers.js'

interface RawAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

function get(port: number, path: string, headers: Record<string, string>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

/** The first frame a server answers to the compression offer (PING | 0x80, id 0): its type byte. */
function tcpOfferAnswer(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port })
    let buffered = Buffer.alloc(0)
    socket.on('error', reject)
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      if (buffered.length < 9) return
      socket.destroy()
      resolve(buffered[8] as number)
    })
    socket.write(Buffer.from([0, 0, 0, 5, 0, 0, 0, 0, 0x88]))
  })
}

async function demoWithTasks(t: Test, overrides: Parameters<typeof startDemo>[1] = {}) {
  const demo = await startDemo(t, overrides)
  const token = (await registerAndLogin(demo.app, 'compressor')).tokens.accessToken
  // Ten tasks of ~200 characters: a task list of ~2.5 KB, over the 1 KiB threshold.
  for (let i = 0; i < 10; i++) {
    const created = await demo.app.inject({
      method: 'POST',
      url: '/tasks',
      headers: { authorization: `Bearer ${token}` },
      payload: { title: `task ${i}`, description: 'x'.repeat(200) },
    })
    t.equal(created.statusCode, 201)
  }
  await demo.app.listen({ port: 0, host: '127.0.0.1' })
  const address = demo.app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return { demo, token, port }
}

t.test('default: a task list over 1 KiB is gzip-compressed for a client that accepts gzip', async (t) => {
  // The demo's own default (startDemo turns compression off for the other tests).
  const { token, port, demo } = await demoWithTasks(t, { compression: loadConfig({}).compression })
  t.equal(loadConfig({}).compression, true)
  const plain = await get(port, '/tasks', { authorization: `Bearer ${token}` })
  t.equal(plain.status, 200)
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: no compression')
  t.ok(plain.body.length > 1024, `the list is ${plain.body.length} bytes`)
  const zipped = await get(port, '/tasks', { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' })
  t.equal(zipped.status, 200)
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.equal(zipped.headers.vary, 'Accept-Encoding')
  t.ok(zipped.body.length < plain.body.length, `${zipped.body.length} < ${plain.body.length} bytes`)
  t.same(JSON.parse(gunzipSync(zipped.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')))
  t.equal(await tcpOfferAnswer(demo.app.triviumTcp.address()?.port as number), 0x89, 'TCP: PONG | 0x80')
})

t.test('COMPRESSION=off: nothing is compressed, on HTTP or TCP', async (t) => {
  const { token, port, demo } = await demoWithTasks(t, { compression: false })
  const answer = await get(port, '/tasks', { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' })
  t.equal(answer.status, 200)
  t.equal(answer.headers['content-encoding'], undefined)
  t.ok(answer.body.length > 1024)
  t.equal(await tcpOfferAnswer(demo.app.triviumTcp.address()?.port as number), 0x09, 'TCP: plain PONG')
})
