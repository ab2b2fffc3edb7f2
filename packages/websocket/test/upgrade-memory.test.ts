// What an open WebSocket connection keeps of its upgrade (issue 42, bench/density): the upgrade's HTTP
// exchange (Node's IncomingMessage and the ServerResponse bound to the socket, Fastify's Request and
// Reply) is released once ws accepts the socket; the connection keeps only the headers and query its
// calls' middleware sees, with strings of their own (no slice of the URL). Checked with weak references,
// full collections and a heap snapshot's strings while the connection is open and answering.
import { randomBytes } from 'node:crypto'
import { getHeapSnapshot, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { FrameType } from '@trivium/wire'
import t from 'tap'
import { buildApp, Client, dec } from './helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

async function collected(refs: WeakRef<object>[]): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
    if (refs.every((ref) => ref.deref() === undefined)) return true
  }
  return false
}

t.test('an open connection holds no request, response, Request or Reply of its upgrade', async (t) => {
  const refs: WeakRef<object>[] = []
  const { app, url } = await buildApp({}, (app) => {
    app.addHook('onRequest', (request, reply, done) => {
      if (request.headers.upgrade !== undefined) {
        refs.push(new WeakRef(request), new WeakRef(reply), new WeakRef(request.raw), new WeakRef(reply.raw))
      }
      done()
    })
  })
  t.teardown(() => app.close())
  const client = await Client.open(`${url}?format=json&token=u7`)
  t.teardown(() => client.ws.terminate())
  client.request(1, 'whoami', {})
  const first = await client.reply(1, FrameType.RESPONSE)
  t.ok(first, 'the connection answers')
  t.equal(refs.length, 4, 'the upgrade was seen by the hook')
  t.ok(await collected(refs), 'its request, reply and their Node objects are collected')
  client.request(2, 'whoami', {})
  const again = await client.reply(2, FrameType.RESPONSE)
  t.same(
    dec((again as { payload: Uint8Array }).payload),
    dec((first as { payload: Uint8Array }).payload),
    'still answering, as the same user',
  )
})

/** The heap's strings (a snapshot's string nodes) that contain `part`. */
async function stringsContaining(part: string): Promise<string[]> {
  gc()
  const chunks: Buffer[] = []
  for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer)
  const snapshot = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { strings: string[] }
  return snapshot.strings.filter((s) => s.includes(part))
}

t.test(
  'an open connection keeps no slice of its upgrade URL: its query values are strings of their own',
  async (t) => {
    const { app, url } = await buildApp({}, (app) => {
      app.trivium.endpoint('pad', { method: 'GET', url: '/pad' }, (_b, call) => ({
        pad: (call.query as { pad?: string }).pad,
      }))
    })
    t.teardown(() => app.close())
    // A value long enough that V8 would make a slice of the URL for it, and a mark no other string has.
    const pad = `p${randomBytes(24).toString('hex')}`
    const client = await Client.open(`${url}?format=json&token=u7&pad=${pad}`)
    t.teardown(() => client.ws.terminate())
    client.request(1, 'pad', {})
    const first = await client.reply(1, FrameType.RESPONSE)
    t.same(dec((first as { payload: Uint8Array }).payload), { pad }, 'the call reads the query value')
    const held = await stringsContaining(pad)
    // The server's request URL is the path; the client keeps its own `ws://…` URL.
    t.same(
      held.filter((s) => s.startsWith('/ws?')),
      [],
      'no string of the upgrade URL is left on the heap',
    )
    client.request(2, 'pad', {})
    const again = await client.reply(2, FrameType.RESPONSE)
    t.same(dec((again as { payload: Uint8Array }).payload), { pad }, 'still the same value')
  },
)

t.test(
  "a header value is kept past its connection only for a common name (an application's x-api-key is not)",
  async (t) => {
    const { app, url } = await buildApp({}, (app) => {
      app.trivium.endpoint('key', { method: 'GET', url: '/key' }, (_b, call) => ({
        ok: typeof call.headers['x-api-key'] === 'string',
      }))
    })
    t.teardown(() => app.close())
    // Two marks, searched for together: the values themselves exist only in the request and the server.
    const a = randomBytes(12).toString('hex')
    const b = randomBytes(12).toString('hex')
    const client = await Client.open(`${url}?format=json`, {
      'x-api-key': `${a}-${b}`,
      'user-agent': `${b}-${a}`,
    })
    client.request(1, 'key', {})
    const reply = await client.reply(1, FrameType.RESPONSE)
    t.same(dec((reply as { payload: Uint8Array }).payload), { ok: true }, 'the call reads the header')
    const closed = new Promise((resolve) => client.ws.once('close', resolve))
    client.ws.close()
    await closed
    let held: string[] = []
    for (let i = 0; i < 10; i++) {
      gc()
      await new Promise((r) => setImmediate(r))
      held = (await stringsContaining(a)).filter((s) => s.includes(b))
      if (!held.some((s) => s.startsWith(a))) break
    }
    t.same(
      held.filter((s) => s.startsWith(a)),
      [],
      'the x-api-key value is gone with its connection',
    )
    t.equal(
      held.filter((s) => s.startsWith(b)).length,
      1,
      'the user-agent value is shared with the next connection',
    )
  },
)
