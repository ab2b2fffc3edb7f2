// What an open connection is counted and guarded by, now that neither keeps a table of its own per
// connection (bench/density): the per-address cap is released by the session's own address, and an
// upgrade's early-end guard is removed when ws accepts the socket.
import { connect } from 'node:net'
import t from 'tap'
import { buildApp, Client, until } from './helpers.js'

t.test('the per-address cap: refused at the cap, a closed connection frees its place', async (t) => {
  const { app, url } = await buildApp({ maxConnectionsPerIp: 2 })
  t.teardown(() => app.close())
  const a = await Client.open(url)
  const b = await Client.open(url)
  const refused = await Client.open(url).then(
    () => undefined,
    (err: { status?: number }) => err.status,
  )
  t.equal(refused, 503, 'a third connection from the address is refused')
  a.ws.close()
  await a.closed
  await until(() => app.triviumWebSocket.connections === 1, 'the server to count the close')
  const c = await Client.open(url)
  c.request(1, 'echo', { n: 1 })
  t.equal((await c.reply(1))?.type, 2, 'a connection after the close is accepted and answers')
  const refusedAgain = await Client.open(url).then(
    () => undefined,
    (err: { status?: number }) => err.status,
  )
  t.equal(refusedAgain, 503, 'and the cap holds again at two')
  b.ws.close()
  c.ws.close()
  await Promise.all([b.closed, c.closed])
})

t.test('a client that ends its side before the upgrade is accepted gets its socket closed', async (t) => {
  let release: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let identifying = false
  const { app, url } = await buildApp({
    identify: async () => {
      identifying = true
      await gate
      return undefined
    },
  })
  t.teardown(async () => {
    release()
    await app.close()
  })
  const { port } = new URL(url)
  const closed = await new Promise<boolean>((resolve) => {
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(
        'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      )
      void until(() => identifying, 'the upgrade to reach identify').then(() => socket.end())
    })
    socket.on('close', () => resolve(true))
    socket.on('error', () => resolve(true))
  })
  t.ok(closed, 'the server closed the socket while identify was still waiting')
  t.equal(app.triviumWebSocket.connections, 0)
})
