// Server for bench/streams (run pinned to CPU 0): one Trivium app (core, WebSocket, TCP direct) with a
// server stream `down` (yields n items), a client stream `up` (counts the items it reads) and a
// bidirectional `echo` (yields each item back). JSON, one 48-byte item model. Prints `PORTS {json}`.
import { createRequire } from 'node:module'

const pkg = (name) => new URL(`../../packages/${name}/dist/index.js`, import.meta.url).href
const requireWs = createRequire(new URL('../../packages/websocket/package.json', import.meta.url))
const Fastify = requireWs('fastify')
const { default: core, triviumFactoryOptions } = await import(pkg('core'))
const { default: websocket } = await import(pkg('websocket'))
const { default: tcp } = await import(pkg('tcp'))

const window = Number(process.env.BENCH_WINDOW ?? 256 * 1024)
const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(core)
await app.register(websocket, { clientStreamWindowBytes: window })
await app.register(tcp, { port: 0, clientStreamWindowBytes: window })
const item = (i) => ({ i, title: 'a task title of thirty-two bytes' })
app.trivium.stream('down', { method: 'POST', url: '/down' }, async function* (req) {
  for (let i = 0; i < req.n; i++) yield item(i)
})
app.trivium.clientStream('up', { method: 'POST', url: '/up' }, async (requests) => {
  let count = 0
  for await (const _ of requests) count++
  return { count }
})
app.trivium.bidiStream('echo', { method: 'POST', url: '/echo' }, async function* (requests) {
  for await (const value of requests) yield value
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(
  `PORTS ${JSON.stringify({ http: app.server.address().port, tcp: app.triviumTcp.address().port })}`,
)
process.on('SIGTERM', () => app.close().then(() => process.exit(0)))
