// Compression (issue 34 item 2): bytes on the wire and CPU per call of a 100-task `tasks.list`, with and
// without compression, on HTTP, WebSocket and TCP, in one process (server and @trivium/client together:
// the machine is shared, so no socket load test). Bytes are counted by a TCP proxy between client and
// server (both directions); CPU is process.cpuUsage() over the calls, server and client together,
// divided by the calls. Same run, same process: compare the rows with each other, not across runs.
//
// usage: node bench/compression/run.mjs   (env: BENCH_CALLS=400)
import { createServer, connect as netConnect } from 'node:net'

const pkg = (name, file = 'index.js') => new URL(`../../packages/${name}/dist/${file}`, import.meta.url).href
const { default: core } = await import(pkg('core'))
const { default: codec } = await import(pkg('codec'))
const { default: websocket } = await import(pkg('websocket'))
const { default: tcp } = await import(pkg('tcp'))
const { createClient } = await import(pkg('client', 'node.js'))
const generated = new URL('../../apps/demo/dist/generated/', import.meta.url).href
const { endpoints } = await import(`${generated}endpoints.js`)
const { TaskPage } = await import(`${generated}models.js`)
const { default: Fastify } = await import(
  new URL('../../packages/core/node_modules/fastify/fastify.js', import.meta.url).href
)

const CALLS = Number(process.env.BENCH_CALLS ?? 400)

// 100 tasks as the demo stores them: varied titles, some descriptions, a few tags, real timestamps.
const WORDS =
  'write review plan fix ship test draft call email update report budget design deploy check'.split(' ')
const TAGS = ['work', 'home', 'urgent', 'later', 'q3', 'ops', 'design']
let seed = 7
const rand = (n) => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31
  return seed % n
}
const phrase = (n) => Array.from({ length: n }, () => WORDS[rand(WORDS.length)]).join(' ')
// 32 different pages, served in turn: permessage-deflate keeps its window across messages, so the same
// page every time would make WebSocket look better than any real list.
const makePage = () =>
  TaskPage.fromJSON({
    items: Array.from({ length: 100 }, (_, i) => ({
      id: 1000 + rand(100000),
      title: `${phrase(3 + rand(4))} #${i}`,
      description: rand(3) === 0 ? null : `${phrase(8 + rand(12))}.`,
      done: rand(2) === 0,
      tags: Array.from({ length: rand(3) }, () => TAGS[rand(TAGS.length)]),
      ownerId: 1 + rand(50),
      createdAt: new Date(Date.UTC(2026, 10, 1, 9, rand(600))).toISOString(),
      updatedAt: new Date(Date.UTC(2026, 10, 20, 9, rand(600), rand(60))).toISOString(),
    })),
    nextCursor: 'MTEwMA',
  })
const pages = Array.from({ length: 32 }, makePage)
let served = 0

const app = Fastify({ logger: false })
await app.register(core, { compression: true })
await app.register(codec)
await app.register(websocket, { perMessageDeflate: true })
await app.register(tcp, { port: 0, compression: true })
const spec = endpoints['tasks.list']
app.trivium.endpoint(
  'tasks.list',
  { method: spec.method, url: spec.url, request: spec.request, response: spec.response },
  () => pages[served++ % pages.length],
)
await app.listen({ port: 0, host: '127.0.0.1' })
const httpPort = app.server.address().port
const tcpPort = app.triviumTcp.address().port

function proxy(target) {
  const counts = { up: 0, down: 0 }
  const server = createServer((client) => {
    const upstream = netConnect(target, '127.0.0.1')
    client.on('data', (c) => {
      counts.up += c.length
    })
    upstream.on('data', (c) => {
      counts.down += c.length
    })
    client.pipe(upstream)
    upstream.pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    for (const s of [client, upstream]) {
      s.on('error', close)
      s.on('close', close)
    }
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, counts, port: server.address().port })),
  )
}
const httpProxy = await proxy(httpPort)
const tcpProxy = await proxy(tcpPort)

const WsModule = await import(
  new URL('../../packages/client/node_modules/ws/wrapper.mjs', import.meta.url).href
)
const WebSocket = WsModule.default
class PlainWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols, { perMessageDeflate: false })
  }
}

function client(transport, compressed, format) {
  const common = { endpoints: { 'tasks.list': endpoints['tasks.list'] }, format, reconnectAttempts: 0 }
  if (transport === 'http')
    return createClient({
      ...common,
      transport: 'http',
      url: `http://127.0.0.1:${httpProxy.port}`,
      ...(compressed ? {} : { headers: { 'accept-encoding': 'identity' } }),
    })
  if (transport === 'websocket')
    return createClient({
      ...common,
      transport: 'websocket',
      url: `ws://127.0.0.1:${httpProxy.port}/ws`,
      ...(compressed ? {} : { WebSocket: PlainWebSocket }),
    })
  return createClient({
    ...common,
    transport: 'tcp',
    host: '127.0.0.1',
    port: tcpProxy.port,
    compression: compressed,
  })
}

const rows = []
for (const format of ['json', 'binary']) {
  for (const transport of ['http', 'websocket', 'tcp']) {
    for (const compressed of [false, true]) {
      const c = client(transport, compressed, format)
      for (let i = 0; i < 50; i++) await c.call('tasks.list', {}) // warm-up, connection open, negotiated
      const counts = transport === 'tcp' ? tcpProxy.counts : httpProxy.counts
      const [up0, down0] = [counts.up, counts.down]
      const cpu0 = process.cpuUsage()
      const t0 = process.hrtime.bigint()
      for (let i = 0; i < CALLS; i++) {
        const result = await c.call('tasks.list', {})
        if (result.items.length !== 100) throw new Error('wrong answer')
      }
      const cpu = process.cpuUsage(cpu0)
      const wall = Number(process.hrtime.bigint() - t0) / 1e3
      rows.push({
        transport,
        format,
        compressed,
        down: (counts.down - down0) / CALLS,
        up: (counts.up - up0) / CALLS,
        cpuUs: (cpu.user + cpu.system) / CALLS,
        wallUs: wall / CALLS,
      })
      await c.close()
    }
  }
}

console.log(
  `100-task tasks.list, ${CALLS} sequential calls per row; bytes per call through a counting proxy (server → client / client → server); CPU per call = server + client in one process`,
)
console.log('| transport | format | compression | bytes down | bytes up | CPU µs/call | wall µs/call |')
console.log('|---|---|---|---|---|---|---|')
for (const r of rows) {
  const base = rows.find((b) => b.transport === r.transport && b.format === r.format && !b.compressed)
  const ratio = r.compressed ? ` (${((r.down / base.down) * 100).toFixed(0)}%)` : ''
  const cpuRatio = r.compressed ? ` (×${(r.cpuUs / base.cpuUs).toFixed(2)})` : ''
  console.log(
    `| ${r.transport} | ${r.format} | ${r.compressed ? 'on' : 'off'} | ${Math.round(r.down)}${ratio} | ${Math.round(r.up)} | ${Math.round(r.cpuUs)}${cpuRatio} | ${Math.round(r.wallUs)} |`,
  )
}
httpProxy.server.close()
tcpProxy.server.close()
await app.close()
