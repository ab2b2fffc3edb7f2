// Load generator for frame transports (run pinned to CPU 1). One process, `connections` sockets, each
// keeping `depth` requests in flight (a response frees a slot, which is refilled at once). Refills made
// while handling one socket read go out together (TCP: one write; WebSocket: one corked write), so the
// client spends little per request. The same code drives the Trivium transports and the raw echo
// ceilings. Prints `{ rps, errors, clientCpu }` (clientCpu: CPU time of this process / wall time over
// the measured window; near 1.0 means the client itself was the limit).
//
// usage: client.mjs <ws|tcp> <port> <seconds> <connections> <depth> [json options]
//   options: { endpoint = 'hello', body = '{}', meta = { format: 'json' } (TCP), query = 'format=json' (WS),
//              counted: [warm-up, measured, windows = 1] }
// `counted` (bench/transports/server-instructions.mjs): instead of a timed run, `warm-up` requests, then a
// `READY` line and a wait for a line on stdin, then exactly `measured` requests (every connection keeping
// `depth` in flight until the budget is spent), then `MEASURED <n>`: no request crosses either boundary;
// `windows` times (READY, wait, measured requests, MEASURED).

import { createRequire } from 'node:module'
import { connect } from 'node:net'

const [kind, port, duration = '3', connections = '16', depth = '8', json = '{}'] = process.argv.slice(2)
const opts = JSON.parse(json)
const endpoint = opts.endpoint ?? 'hello'
const body = new TextEncoder().encode(opts.body ?? '{}')
const requireWs = createRequire(new URL('../../packages/websocket/package.json', import.meta.url))
const WebSocket = requireWs('ws')
const { encodeWsFrame, encodeTcpFrame, encodeMetadata } = await import(
  new URL('../../packages/wire/dist/index.js', import.meta.url).href
)
const inFlight = Number(depth)

let done = 0
let errors = 0
let firstError
let stop = false
const ends = []
/** Counted mode: requests still to send in this phase (Infinity in a timed run) and each connection's kick. */
let budget = Number.POSITIVE_INFINITY
const kicks = []
const take = (n) => {
  const k = Math.min(n, budget)
  budget -= k
  return k
}

/** A request frame encoded once; each send copies it and patches the request id at `idOffset`. */
function template(bytes, idOffset) {
  const frame = Buffer.from(bytes)
  return {
    size: frame.length,
    /** Writes `n` frames with ids `from..from+n-1` into one buffer. */
    fill(n, from) {
      const out = Buffer.allocUnsafe(frame.length * n)
      for (let i = 0; i < n; i++) {
        frame.copy(out, i * frame.length)
        out.writeUInt32BE((from + i) >>> 0 || 1, i * frame.length + idOffset)
      }
      return out
    },
  }
}

function noteError(payload) {
  errors++
  firstError ??= Buffer.from(payload).toString('utf8')
}

function wsConn() {
  return new Promise((resolve) => {
    const query = opts.query ?? 'format=json'
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?${query}`, { perMessageDeflate: false })
    const t = template(encodeWsFrame({ type: 1, requestId: 1, endpoint, payload: body }), 1)
    let id = 0
    let owed = 0
    const flush = () => {
      if (stop || ws.readyState !== 1) return
      const n = take(owed)
      owed = 0
      if (n === 0) return
      const all = t.fill(n, id + 1)
      id += n
      ws._socket.cork()
      for (let i = 0; i < n; i++) ws.send(all.subarray(i * t.size, (i + 1) * t.size), { binary: true })
      ws._socket.uncork()
    }
    const kick = () => {
      owed = inFlight
      flush()
    }
    ws.on('open', () => (opts.counted ? kicks.push(kick) : kick()))
    ws.on('message', (data) => {
      if (data[0] === 3) noteError(data.subarray(5))
      else done++
      if (owed++ === 0) queueMicrotask(flush)
    })
    ws.on('close', resolve)
    ws.on('error', () => resolve())
    ends.push(() => ws.terminate())
  })
}

function tcpConn() {
  return new Promise((resolve) => {
    const meta = encodeMetadata(opts.meta ?? { format: 'json' })
    const payload = new Uint8Array(meta.length + body.length)
    payload.set(meta)
    payload.set(body, meta.length)
    const t = template(encodeTcpFrame({ type: 1, requestId: 1, endpoint, payload }), 4)
    const socket = connect(Number(port), '127.0.0.1')
    socket.setNoDelay(true)
    let id = 0
    let rest = Buffer.alloc(0)
    const send = (wanted) => {
      const n = stop ? 0 : take(wanted)
      if (n === 0) return
      socket.write(t.fill(n, id + 1))
      id += n
    }
    socket.on('connect', () => (opts.counted ? kicks.push(() => send(inFlight)) : send(inFlight)))
    socket.on('data', (chunk) => {
      let data = rest.length ? Buffer.concat([rest, chunk]) : chunk
      let offset = 0
      let n = 0
      while (data.length - offset >= 9) {
        const length = data.readUInt32BE(offset)
        if (data.length - offset < 4 + length) break
        if (data[offset + 8] === 3) noteError(data.subarray(offset + 9, offset + 4 + length))
        else done++
        n++
        offset += 4 + length
      }
      if (offset < data.length) data = data.subarray(offset)
      else data = Buffer.alloc(0)
      rest = data.length ? Buffer.from(data) : data
      send(n)
    })
    socket.on('close', resolve)
    socket.on('error', () => resolve())
    ends.push(() => socket.destroy())
  })
}

const make = kind === 'ws' ? wsConn : tcpConn
const all = Array.from({ length: Number(connections) }, make)
if (opts.counted) await counted(...opts.counted)

/** Counted mode (see the top): exactly `warm` requests, then `windows` times `measured`, then exit. */
async function counted(warm, measured, windows = 1) {
  while (kicks.length < Number(connections)) await new Promise((r) => setTimeout(r, 5))
  const phase = async (n) => {
    const from = done + errors
    budget = n
    for (const kick of kicks) kick()
    while (done + errors - from < n) await new Promise((r) => setTimeout(r, 1))
  }
  await phase(warm)
  for (let w = 0; w < windows; w++) {
    process.stdout.write('READY\n')
    await new Promise((r) => process.stdin.once('data', r))
    await phase(measured)
    process.stdout.write(`MEASURED ${measured} ${JSON.stringify({ errors, firstError })}\n`)
  }
  stop = true
  for (const end of ends) end()
  process.exit(0)
}
await new Promise((r) => setTimeout(r, 300)) // connect, first round trips
const start = done
const cpu0 = process.cpuUsage()
const t0 = performance.now()
await new Promise((r) => setTimeout(r, Number(duration) * 1000))
const count = done - start
const elapsed = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
stop = true
for (const end of ends) end()
await Promise.race([Promise.all(all), new Promise((r) => setTimeout(r, 500))])
console.log(
  JSON.stringify({
    rps: count / (elapsed / 1000),
    errors,
    firstError,
    clientCpu: (cpu.user + cpu.system) / 1000 / elapsed,
  }),
)
process.exit(0)
