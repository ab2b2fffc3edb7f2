// What an open WebSocket connection keeps of its upgrade (issue 42, bench/density): the upgrade's HTTP
// exchange (Node's IncomingMessage and the ServerResponse bound to the socket, Fastify's Request and
// Reply) is released once ws accepts the socket; the connection keeps only the headers and query its
// calls' middleware sees. Checked with weak references and full collections while the connection is
// open and answering.
import { setFlagsFromString } from 'node:v8'
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
