// The cost of @trivium/protections' security-headers onSend fallback (the hook that puts the headers on
// a reply an app's own earlier onRequest hook answered), in one process: the full stack as the benches
// build it, and the same stack with `securityHeaders: false` plus the seven headers set by a plain
// onRequest hook (no fallback: what the plugin did before issue 31 when no hook ran before it), and a
// third with them set in an onSend hook only (a route's own value kept through hasHeader). All
// driven through `fastify.routing` with Node's request/response built as js-path does, interleaved,
// CPU µs per request (process.cpuUsage), medians of the rounds. `node bench/js-path/headers-fallback.mjs`
// (env BENCH_REQUESTS per round, default 100 000; BENCH_ROUNDS, default 7; BENCH_PATH=/secure).
import { IncomingMessage, ServerResponse } from 'node:http'
import { Duplex } from 'node:stream'
import { DEFAULT_SECURITY_HEADERS } from '@trivium/protections'
import { createStackApp, issueBenchToken } from '../stack/app.mjs'

const N = Number(process.env.BENCH_REQUESTS ?? 100_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const PATH = process.env.BENCH_PATH ?? '/public'
const IN_FLIGHT = 50

const withFallback = await createStackApp()
const names = Object.keys(DEFAULT_SECURITY_HEADERS).map((n) => n.toLowerCase())
const values = Object.values(DEFAULT_SECURITY_HEADERS)
const onRequestOnly = await createStackApp({ securityHeaders: false })
onRequestOnly.addHook('onRequest', (_request, reply, done) => {
  for (let i = 0; i < names.length; i++) reply.header(names[i], values[i])
  done()
})
const onSendOnly = await createStackApp({ securityHeaders: false })
onSendOnly.addHook('onSend', (_request, reply, payload, done) => {
  for (let i = 0; i < names.length; i++) if (!reply.hasHeader(names[i])) reply.header(names[i], values[i])
  done(null, payload)
})
await withFallback.ready()
await onRequestOnly.ready()
await onSendOnly.ready()
const apps = {
  'onRequest + onSend fallback': withFallback,
  'onRequest only': onRequestOnly,
  'onSend only': onSendOnly,
}
const tokens = new Map()
for (const [label, app] of Object.entries(apps)) {
  tokens.set(label, `Bearer ${await issueBenchToken(app)}`)
  const res = await app.inject({ url: PATH, headers: { authorization: tokens.get(label) } })
  if (res.headers['x-frame-options'] !== 'DENY') throw new Error(`${label}: no security headers`)
}

class MemorySocket extends Duplex {
  remoteAddress = '127.0.0.1'
  _read() {}
  _write(_chunk, _encoding, callback) {
    callback()
  }
}
const sockets = Array.from({ length: IN_FLIGHT }, () => new MemorySocket())
function request(app, socket, authorization) {
  return new Promise((resolve) => {
    const req = new IncomingMessage(socket)
    req.method = 'GET'
    req.url = PATH
    req.httpVersion = '1.1'
    req.httpVersionMajor = 1
    req.httpVersionMinor = 1
    req.headers = { host: 'localhost', origin: 'https://app.example.com', authorization }
    req.rawHeaders = Object.entries(req.headers).flat()
    req.push(null)
    req.complete = true
    const res = new ServerResponse(req)
    res.assignSocket(socket)
    res.once('finish', () => {
      res.detachSocket(socket)
      resolve(res)
    })
    app.routing(req, res)
  })
}
async function run(label, app, count) {
  const authorization = tokens.get(label)
  const used = process.cpuUsage()
  for (let i = 0; i < count / IN_FLIGHT; i++) {
    const done = await Promise.all(sockets.map((s) => request(app, s, authorization)))
    const res = done[0]
    if (res.statusCode !== 200) throw new Error(`${label}: ${res.statusCode}`)
    await new Promise(setImmediate) // a new turn of the event loop, as a server's next read is
  }
  const spent = process.cpuUsage(used)
  return (spent.user + spent.system) / count
}
const samples = Object.fromEntries(Object.keys(apps).map((k) => [k, []]))
for (const [label, app] of Object.entries(apps)) await run(label, app, 50_000) // warm-up
for (let r = 0; r < ROUNDS; r++)
  for (const [label, app] of Object.entries(apps)) samples[label].push(await run(label, app, N))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [label, xs] of Object.entries(samples))
  console.log(
    `${label.padEnd(30)} ${median(xs).toFixed(2)} CPU µs/request  (${xs.map((x) => x.toFixed(2)).join(' ')})`,
  )
for (const label of ['onRequest + onSend fallback', 'onSend only']) {
  const diffs = samples[label].map((x, i) => x - samples['onRequest only'][i])
  console.log(
    `${label} − onRequest only: ${median(diffs).toFixed(2)} µs/request (median of the rounds' differences; ${PATH})`,
  )
}
for (const app of Object.values(apps)) await app.close()
