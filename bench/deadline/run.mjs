// The cost of a deadline per call (issue 34, PROTOCOL.md "Deadlines"), in one process so that both sides
// of each ratio see the same machine: the same call with and without a client timeout, alternated round
// by round (ABAB…), each side's figure the fastest of its rounds (the machine and GC only ever add time).
//   frames: `trivium.start` — the frame transports' whole path below the socket (parse, pipeline,
//           handler), with metadata `{}` vs `{ timeout_ms: "30000" }`;
//   http:   `fastify.routing` on in-memory sockets as bench/js-path drives it, without vs with the
//           `Trivium-Timeout-Ms: 30000` header.
// Each for a handler that answers synchronously (a deadline costs a header/metadata read and one object:
// no timer is armed) and one that returns a promise (the deadline arms a timer and races it).
// usage: node bench/deadline/run.mjs   (env BENCH_ROUNDS=20, BENCH_CALLS=20000)
import { createServer } from 'node:http'
import { Duplex } from 'node:stream'
import trivium, { triviumFactoryOptions } from '@trivium/core'
import Fastify from 'fastify'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20)
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000)
const IN_FLIGHT = 50

const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(trivium)
app.trivium.endpoint('sync.hello', { method: 'GET', url: '/sync' }, () => ({ hello: 'world' }))
app.trivium.endpoint('async.hello', { method: 'GET', url: '/async' }, async () => ({ hello: 'world' }))
await app.ready()

// ---- frames: trivium.start ----
const json = app.trivium.formats.get('json')
const empty = new Uint8Array(0)
function frameRun(endpoint, metadata) {
  const init = {
    endpoint,
    protocol: 'tcp',
    payload: empty,
    format: json,
    requestId: 'c:1',
    log: app.log,
    metadata,
  }
  return async () => {
    for (let i = 0; i < CALLS / IN_FLIGHT; i++) {
      const pending = []
      for (let j = 0; j < IN_FLIGHT; j++) pending.push(app.trivium.start(init).result)
      await Promise.all(pending)
    }
  }
}

// ---- http: fastify.routing on in-memory sockets (bench/js-path/case.mjs) ----
class MemorySocket extends Duplex {
  resolve = undefined
  remoteAddress = '127.0.0.1'
  _read() {}
  _write(_chunk, _encoding, callback) {
    callback()
  }
  _writev(_chunks, callback) {
    callback()
  }
}
const server = createServer(
  { requireHostHeader: false, keepAliveTimeout: 0, requestTimeout: 0 },
  (req, res) => {
    res.once('finish', () => req.socket.resolve(res.statusCode))
    app.routing(req, res)
  },
)
const sockets = Array.from({ length: IN_FLIGHT }, () => {
  const socket = new MemorySocket()
  server.emit('connection', socket)
  return socket
})
function httpRun(path, timeout) {
  const head = Buffer.from(
    `GET ${path} HTTP/1.1\r\nhost: localhost\r\n${timeout ? `trivium-timeout-ms: ${timeout}\r\n` : ''}\r\n`,
    'latin1',
  )
  const request = (socket) =>
    new Promise((resolve) => {
      socket.resolve = resolve
      socket.push(head)
    })
  return async () => {
    for (let i = 0; i < CALLS / IN_FLIGHT; i++) {
      const statuses = await Promise.all(sockets.map(request))
      for (const s of statuses) if (s !== 200) throw new Error(`status ${s}`)
      await new Promise(setImmediate) // a new turn, as a server's next read is (see js-path)
    }
  }
}

async function timed(run) {
  const t0 = process.hrtime.bigint()
  await run()
  return Number(process.hrtime.bigint() - t0) / 1000 / CALLS
}

const pairs = [
  ['frames, sync handler', frameRun('sync.hello', {}), frameRun('sync.hello', { timeout_ms: '30000' })],
  ['frames, async handler', frameRun('async.hello', {}), frameRun('async.hello', { timeout_ms: '30000' })],
  ['http, sync handler', httpRun('/sync'), httpRun('/sync', '30000')],
  ['http, async handler', httpRun('/async'), httpRun('/async', '30000')],
]
console.log(
  `deadline cost per call: ${ROUNDS} alternating rounds of ${CALLS} calls per side, fastest round each`,
)
console.log(
  `${'path'.padEnd(24)} ${'none µs'.padStart(8)} ${'deadline µs'.padStart(12)} ${'ratio'.padStart(7)} ${'+µs'.padStart(6)}`,
)
for (const [name, without, withDeadline] of pairs) {
  for (let i = 0; i < 3; i++) {
    await without()
    await withDeadline()
  }
  let a = Number.POSITIVE_INFINITY
  let b = Number.POSITIVE_INFINITY
  for (let r = 0; r < ROUNDS; r++) {
    a = Math.min(a, await timed(without))
    b = Math.min(b, await timed(withDeadline))
  }
  console.log(
    `${name.padEnd(24)} ${a.toFixed(2).padStart(8)} ${b.toFixed(2).padStart(12)} ${(b / a).toFixed(3).padStart(7)} ${(b - a).toFixed(2).padStart(6)}`,
  )
}
await app.close()
