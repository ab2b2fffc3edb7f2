// One case of bench/js-path, in a process of its own (module evaluation order moves a process's speed,
// bench/README.md): builds the same app as the side-by-side server, then drives `fastify.routing` the
// way @trivium/tcp's inject mode does since 2026-11-26 (Node's own IncomingMessage and ServerResponse
// made with their public constructors on an in-memory Duplex; no parser, no socket, no kernel) for a few
// hundred thousand requests, 50 in flight, and prints `US <µs per request>` for each of five rounds.
import { IncomingMessage, ServerResponse } from 'node:http'
import { Duplex } from 'node:stream'

// usage: case.mjs <bare|ceiling|host-route|core|deadline|async|async-deadline|public|secure> [requests per round]
const which = process.argv[2]
const N = Number(process.argv[3] ?? 200_000)
const IN_FLIGHT = 50
// Fewer warm-up batches and rounds for a run under valgrind (instructions.mjs), where each request
// costs ~50× its native time; the defaults are the timed runs'.
const WARMUP_BATCHES = Number(process.env.JS_PATH_WARMUP ?? 2000)
const MEASURED_ROUNDS = Number(process.env.JS_PATH_ROUNDS ?? 5)

const headers = { host: 'localhost', origin: 'https://app.example.com' }
let app
let path
if (which === 'bare' || which === 'ceiling' || which === 'host-route') {
  // host-route: the bare route in an app that also registers @trivium/core (before the route, as an app
  // adding Trivium beside its own routes does): what core costs a route of the host's that is not an
  // endpoint, i.e. its app-wide preHandler, the early-route guard (bench/README.md).
  const trivium = which === 'host-route' ? await import('@trivium/core') : undefined
  const { default: Fastify } = await import('fastify')
  const { SPEC_HEADERS } = await import('../side-by-side/headers.mjs')
  app = Fastify({ ...trivium?.triviumFactoryOptions(), logger: false })
  if (trivium) await app.register(trivium.default)
  if (which === 'ceiling') {
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(SPEC_HEADERS)
      done()
    })
  }
  app.get('/hello', async () => ({ hello: 'world' }))
  path = '/hello'
} else if (which === 'core' || which === 'deadline' || which === 'async' || which === 'async-deadline') {
  // bench/core/server.mjs's endpoint: @trivium/core alone. `deadline`: the same call carrying a client
  // timeout (PROTOCOL.md "Deadlines"); `async`: an endpoint whose handler returns a promise (a deadline
  // then arms its timer and races it), with and without the timeout.
  const { default: trivium, triviumFactoryOptions } = await import('@trivium/core')
  const { default: Fastify } = await import('fastify')
  app = Fastify({ ...triviumFactoryOptions(), logger: false })
  await app.register(trivium)
  // Only the public endpoint of ../stack/endpoints.mjs: its `secure.hello` declares permissions, which
  // core alone refuses to serve unenforced (no @trivium/rbac here).
  app.trivium.endpoint('public.hello', { method: 'GET', url: '/public' }, () => ({ hello: 'world' }))
  app.trivium.endpoint('async.hello', { method: 'GET', url: '/async' }, async () => ({ hello: 'world' }))
  path = which.startsWith('async') ? '/async' : '/public'
  if (which.endsWith('deadline')) headers['trivium-timeout-ms'] = '30000'
} else {
  // bench/stack/server.mjs's app.
  const { createStackApp, issueBenchToken } = await import('../stack/app.mjs')
  // JS_PATH_STACK_WITHOUT=securityHeaders,cors,rateLimit,stages (bench/README.md, fourth round): the
  // stack without those protections, or (`stages`, a measuring device only: the app then lacks the
  // behaviours) without any app-wide preHandler and onSend hook (core's early-route guard, the security
  // headers' fallback), for what each part costs a request.
  const without = (process.env.JS_PATH_STACK_WITHOUT ?? '').split(/[,+]/)
  const protections = Object.fromEntries(
    ['securityHeaders', 'cors', 'rateLimit'].filter((p) => without.includes(p)).map((p) => [p, false]),
  )
  app = await createStackApp({ protections, dropStages: without.includes('stages') })
  await app.ready()
  path = which === 'secure' ? '/secure' : '/public'
  if (which === 'secure') headers.authorization = `Bearer ${await issueBenchToken(app)}`
}
await app.ready()

/** One in-memory connection per request in flight; what the server writes back is dropped. */
class MemorySocket extends Duplex {
  remoteAddress = '127.0.0.1'
  _read() {}
  _write(_chunk, _encoding, callback) {
    callback()
  }
  _writev(_chunks, callback) {
    callback()
  }
}
const sockets = Array.from({ length: IN_FLIGHT }, () => new MemorySocket())
// As TCP inject mode builds them: Node's request and response made with their public constructors, a
// fresh header object and token string per request (as Node's parser makes them).
const authorization = headers.authorization
function request(socket) {
  return new Promise((resolve) => {
    const req = new IncomingMessage(socket)
    req.method = 'GET'
    req.url = path
    req.httpVersion = '1.1'
    req.httpVersionMajor = 1
    req.httpVersionMinor = 1
    const h = { ...headers }
    if (authorization !== undefined) h.authorization = Buffer.from(authorization).toString('latin1')
    req.rawHeaders = Object.entries(h).flat()
    req.headers = h
    req.push(null)
    req.complete = true
    const res = new ServerResponse(req)
    res.assignSocket(socket)
    res.once('finish', () => {
      res.detachSocket(socket)
      resolve(res.statusCode)
    })
    app.routing(req, res)
  })
}
async function batch() {
  const pending = []
  for (const socket of sockets) pending.push(request(socket))
  for (const status of await Promise.all(pending)) if (status !== 200) throw new Error(`status ${status}`)
  // A new turn of the event loop, as a server's next read is: the responses' `finish` events are queued
  // with process.nextTick, which runs only once the microtask queue is empty. Chained from promise to
  // promise alone, a run never empties it, so every request of the run stayed reachable from the tick
  // queue until the end (the heap grew to ~900 MB and garbage collection was ~40 % of the time).
  await new Promise(setImmediate)
}
for (let i = 0; i < WARMUP_BATCHES; i++) await batch()
// Marks the end of the warm-up in the output (`--trace-gc` lines after it are the measured rounds').
console.log('WARM')
// JS_PATH_GATE=1 (instructions.mjs): wait for a line on stdin before and after the measured rounds, so
// that callgrind counts only them (its collection is switched on and off meanwhile).
const gate = process.env.JS_PATH_GATE === '1'
const lines = gate
  ? (await import('node:readline')).createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  : undefined
if (lines) await lines.next()
for (let r = 0; r < MEASURED_ROUNDS; r++) {
  const t0 = process.hrtime.bigint()
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < N / IN_FLIGHT; i++) await batch()
  const cpu = process.cpuUsage(cpu0)
  console.log(`US ${Number(process.hrtime.bigint() - t0) / 1000 / N}`)
  // The process's CPU time (all its threads, pinned to one core): what other load on the machine
  // leaves of the figure when the wall clock is shared with it (bench/README.md, js-path).
  console.log(`CPU ${(cpu.user + cpu.system) / N}`)
}
if (lines) {
  console.log('DONE')
  await lines.next()
  process.exit(0)
}
