// Servers for bench/transports (run pinned to CPU 0): one Trivium app serving `hello` over HTTP,
// WebSocket and TCP direct; a second app with TCP in inject mode; a bare Fastify route; raw `ws` and
// raw `net` length-prefixed echo servers (the ceilings). Prints `PORTS {json}`.

import { createRequire } from 'node:module'
import { createServer } from 'node:net'

const pkg = (name) => new URL(`../../packages/${name}/dist/index.js`, import.meta.url).href
const requireWs = createRequire(new URL('../../packages/websocket/package.json', import.meta.url))
const Fastify = requireWs('fastify')
const { WebSocketServer } = requireWs('ws')
const { default: core } = await import(pkg('core'))
const { default: websocket } = await import(pkg('websocket'))
const { default: tcp } = await import(pkg('tcp'))
const { TcpFrameReader, encodeTcpFrame } = await import(pkg('wire'))

async function triviumApp(tcpMode, withWs) {
  const app = Fastify({ logger: false })
  await app.register(core)
  if (withWs) await app.register(websocket)
  await app.register(tcp, { port: 0, mode: tcpMode, maxConnectionsPerIp: 1000 })
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({ hello: 'world' }))
  app.get('/bare', async () => ({ hello: 'world' }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const main = await triviumApp('direct', true)
const injectApp = await triviumApp('inject', false)

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
wss.on('connection', (ws) => ws.on('message', (data) => ws.send(data, { binary: true })))
await new Promise((r) => wss.once('listening', r))

// raw net echo: length-prefixed frames, answers batched per event-loop turn (the ceiling)
const net = createServer((socket) => {
  socket.setNoDelay(true)
  const reader = new TcpFrameReader()
  let queue = []
  let scheduled = false
  socket.on('error', () => {})
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk)) queue.push(encodeTcpFrame({ ...f, type: 2, endpoint: undefined }))
    if (!scheduled) {
      scheduled = true
      setImmediate(() => {
        scheduled = false
        socket.write(queue.length === 1 ? queue[0] : Buffer.concat(queue))
        queue = []
      })
    }
  })
})
await new Promise((r) => net.listen(0, '127.0.0.1', r))

console.log(
  `PORTS ${JSON.stringify({
    http: main.server.address().port,
    tcpDirect: main.triviumTcp.address().port,
    tcpInject: injectApp.triviumTcp.address().port,
    wsRaw: wss.address().port,
    netRaw: net.address().port,
  })}`,
)
process.on('SIGTERM', () => process.exit(0))
