// HTTP/2 load for bench/transports (run pinned to CPU 1): `connections` sessions, each keeping `depth`
// streams in flight (a finished stream is replaced at once), GET `path` for `seconds`. Prints
// `{ rps, errors, non2xx, clientCpu }` as client.mjs does. Usage:
//   node h2-client.mjs <origin> <path> <seconds> <connections> <depth> [<ca file>] [<headers json>]
import { readFileSync } from 'node:fs'
import http2 from 'node:http2'

const [origin, path, seconds, connections, depth, caFile, headersJson] = process.argv.slice(2)
const ca = caFile ? readFileSync(caFile) : undefined
const extra = headersJson ? JSON.parse(headersJson) : {}
const end = Date.now() + Number(seconds) * 1000
let done = 0
let errors = 0
let non2xx = 0

function run(session) {
  return new Promise((resolve) => {
    let inFlight = 0
    const next = () => {
      if (Date.now() >= end) {
        if (inFlight === 0) resolve()
        return
      }
      inFlight++
      const stream = session.request({ ':path': path, ...extra })
      stream.on('response', (h) => {
        if (h[':status'] < 200 || h[':status'] >= 300) non2xx++
      })
      stream.resume()
      // `end` (the response read), not `close`: a client stream's `close` waits on the session's own
      // bookkeeping and halved the rate against a bare node:http2 server.
      let settled = false
      const finish = (failed) => {
        if (settled) return
        settled = true
        inFlight--
        if (failed) errors++
        else done++
        next()
      }
      stream.on('end', () => finish(false))
      stream.on('error', () => finish(true))
    }
    for (let i = 0; i < Number(depth); i++) next()
  })
}

const sessions = Array.from({ length: Number(connections) }, () => http2.connect(origin, ca ? { ca } : {}))
await Promise.all(sessions.map((s) => new Promise((r, j) => s.once('connect', r).once('error', j))))
const cpu0 = process.cpuUsage()
const start = performance.now()
await Promise.all(sessions.map(run))
const elapsed = (performance.now() - start) / 1000
const cpu = process.cpuUsage(cpu0)
for (const s of sessions) s.close()
console.log(
  JSON.stringify({ rps: done / elapsed, errors, non2xx, clientCpu: (cpu.user + cpu.system) / 1e6 / elapsed }),
)
