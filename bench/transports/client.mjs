// Load generator for frame transports (run pinned to CPU 1): `connections` sockets, each with one
// request in flight (like autocannon -c N -p 1), for `duration` s. Prints `{ rps, errors }`.

import { createRequire } from 'node:module'
import { connect } from 'node:net'

const [kind, port, duration = '3', connections = '50'] = process.argv.slice(2)
const requireWs = createRequire(new URL('../../packages/websocket/package.json', import.meta.url))
const WebSocket = requireWs('ws')
const { encodeWsFrame, encodeTcpFrame, encodeMetadata, TcpFrameReader, decodeWsFrame } = await import(
  new URL('../../packages/wire/dist/index.js', import.meta.url).href
)

const body = new TextEncoder().encode('{}')
let done = 0
let errors = 0
let stop = false
const ends = []

function wsConn() {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?format=json`)
    let id = 0
    const fire = () => ws.send(encodeWsFrame({ type: 1, requestId: ++id, endpoint: 'hello', payload: body }))
    ws.on('open', fire)
    ws.on('message', (data) => {
      const f = decodeWsFrame(new Uint8Array(data))
      if (f.type === 3) errors++
      else done++
      if (stop) ws.close()
      else fire()
    })
    ws.on('close', resolve)
    ws.on('error', () => resolve())
    ends.push(() => ws.terminate())
  })
}

function tcpConn() {
  return new Promise((resolve) => {
    const meta = encodeMetadata({ format: 'json' })
    const payload = new Uint8Array(meta.length + body.length)
    payload.set(meta)
    payload.set(body, meta.length)
    const socket = connect(Number(port), '127.0.0.1')
    socket.setNoDelay(true)
    const reader = new TcpFrameReader()
    let id = 0
    const fire = () => socket.write(encodeTcpFrame({ type: 1, requestId: ++id, endpoint: 'hello', payload }))
    socket.on('connect', fire)
    socket.on('data', (c) => {
      for (const f of reader.push(c)) {
        if (f.type === 3) errors++
        else done++
        if (!stop) fire()
      }
      if (stop) socket.destroy()
    })
    socket.on('close', resolve)
    socket.on('error', () => resolve())
    ends.push(() => socket.destroy())
  })
}

const make = kind === 'ws' ? wsConn : tcpConn
const all = Array.from({ length: Number(connections) }, make)
await new Promise((r) => setTimeout(r, 300)) // connect
const start = done
const t0 = performance.now()
await new Promise((r) => setTimeout(r, Number(duration) * 1000))
const count = done - start
const seconds = (performance.now() - t0) / 1000
stop = true
for (const end of ends) end()
await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, 500))])
console.log(JSON.stringify({ rps: count / seconds, errors }))
process.exit(0)
