// The floor of bench/density: a server with nothing but the sockets — `ws` (the same copy and options
// @trivium/websocket uses: no permessage-deflate) on a bare `node:http` server, and a bare `node:net`
// server — answering each frame of bench/lib/sessions.mjs with a RESPONSE of the same request id, and
// holding nothing of its own per connection. What an idle session costs here is what ws and Node keep
// per socket (net.Socket, its handle and stream state; ws's WebSocket, Receiver and Sender), which no
// Trivium transport can go below. Started by sessions.mjs `startRaw()` with bench/lib/gc-probe.mjs.
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { createServer as createNetServer } from 'node:net'
import { join } from 'node:path'

const here = new URL('../../', import.meta.url).pathname
const { WebSocketServer } = createRequire(join(here, 'packages/websocket/package.json'))('ws')

/** A RESPONSE frame header for `id` (type first on WebSocket; length, id, type on TCP), empty payload. */
function wsAnswer(data) {
  const out = Buffer.allocUnsafe(5)
  out[0] = 2
  out.writeUInt32BE(data.readUInt32BE(1), 1)
  return out
}

const http = createServer((_req, res) => res.writeHead(404).end())
const wss = new WebSocketServer({ server: http, path: '/ws', perMessageDeflate: false })
wss.on('connection', (ws) => {
  ws.on('message', (data) => ws.send(wsAnswer(data)))
  ws.on('error', () => {})
})

// TCP frames: u32 length (of what follows), u32 request id, u8 type, …; answered with a 5-byte body.
const tcp = createNetServer((socket) => {
  let rest
  socket.on('data', (chunk) => {
    const data = rest === undefined ? chunk : Buffer.concat([rest, chunk])
    let offset = 0
    while (data.length - offset >= 4 && data.length - offset >= 4 + data.readUInt32BE(offset)) {
      const out = Buffer.allocUnsafe(9)
      out.writeUInt32BE(5, 0)
      out.writeUInt32BE(data.readUInt32BE(offset + 4), 4)
      out[8] = 2
      socket.write(out)
      offset += 4 + data.readUInt32BE(offset)
    }
    rest = offset < data.length ? Buffer.from(data.subarray(offset)) : undefined
  })
  socket.on('error', () => {})
})

await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve))
await new Promise((resolve) => tcp.listen(0, '127.0.0.1', resolve))
process.stdout.write(
  `TRIVIUM_PORTS ${JSON.stringify({ http: http.address().port, tcp: tcp.address().port })}\n`,
)
