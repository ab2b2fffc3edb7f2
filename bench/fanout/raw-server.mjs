// bench/fanout's floor: a server with no framework that fans one event out to N raw clients, with the
// same bytes Trivium's `tasks.watch` stream sends (a STREAM_ITEM frame, stream id 2, RAW_PAYLOAD_B64's
// body). Clients connect as to the demo (WebSocket on the HTTP port, or TCP): every REQUEST is answered
// by an empty RESPONSE with its id, and every connection is a subscriber from its start. Each POST
// (any path) is answered 201 `{}`, then the frame goes to every client in the same turn: `ws.send` per
// WebSocket (ws frames it: a corked header + body, one `writev`), `socket.write` per TCP socket.
// Prints `TRIVIUM_PORTS {"http":…,"tcp":…}` as the demo does (bench/lib/sessions.mjs `startServer`).
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { createServer as createTcpServer } from 'node:net'
import { join } from 'node:path'

const here = new URL('../../', import.meta.url).pathname
const { WebSocketServer } = createRequire(join(here, 'packages/websocket/package.json'))('ws')

const STREAM_ITEM = 4
const RESPONSE = 2
const WATCH_ID = 2
const payload = Buffer.from(process.env.RAW_PAYLOAD_B64 ?? '', 'base64')

/** The event as one WebSocket message (type, id, body) and as one TCP frame (length first). */
const wsFrame = Buffer.concat([header(STREAM_ITEM, WATCH_ID), payload])
const tcpFrame = Buffer.concat([u32(5 + payload.length), u32(WATCH_ID), Buffer.of(STREAM_ITEM), payload])

const webSockets = new Set()
const sockets = new Set()

const http = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json' })
    res.end('{}')
    for (const ws of webSockets) ws.send(wsFrame)
    for (const socket of sockets) socket.write(tcpFrame)
  })
})
const wss = new WebSocketServer({ server: http, perMessageDeflate: false })
wss.on('connection', (ws) => {
  webSockets.add(ws)
  ws.on('message', (data) => ws.send(header(RESPONSE, data.readUInt32BE(1))))
  ws.on('close', () => webSockets.delete(ws))
  ws.on('error', () => {})
})

const tcp = createTcpServer((socket) => {
  socket.setNoDelay(true)
  sockets.add(socket)
  let rest = Buffer.alloc(0)
  socket.on('data', (chunk) => {
    let data = Buffer.concat([rest, chunk])
    while (data.length >= 9 && data.length >= 4 + data.readUInt32BE(0)) {
      socket.write(Buffer.concat([u32(5), u32(data.readUInt32BE(4)), Buffer.of(RESPONSE)]))
      data = data.subarray(4 + data.readUInt32BE(0))
    }
    rest = Buffer.from(data)
  })
  socket.on('close', () => sockets.delete(socket))
  socket.on('error', () => {})
})

function header(type, id) {
  return Buffer.concat([Buffer.of(type), u32(id)])
}

function u32(n) {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(n)
  return b
}

await Promise.all([
  new Promise((r) => http.listen(0, '127.0.0.1', r)),
  new Promise((r) => tcp.listen(0, '127.0.0.1', r)),
])
console.log(`TRIVIUM_PORTS ${JSON.stringify({ http: http.address().port, tcp: tcp.address().port })}`)
