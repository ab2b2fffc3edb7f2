// Client-stream items/s per transport in one run (issue 45): WebSocket, TCP, HTTP/2 over TLS and h2c, each
// one `sum` client stream of `ITEMS` items `{"i":1}` sent with @trivium/client/node's `sendAll` (JSON),
// rounds interleaved so that load drifts hit every transport alike. Client and servers share this process:
// the figures compare transports, they are no server ceiling.
//
// usage: node --import=tsx bench/transports/client-streams.ts [items=20000] [rounds=3]

import triviumCore, { triviumHttp2Options } from '@trivium/core'
import Fastify, { type FastifyInstance } from 'fastify'
import { createClient, type EndpointSpec, type TriviumClient } from '../../packages/client/dist/node.js'
import triviumTcp from '../../packages/tcp/dist/index.js'
import triviumWebSocket from '../../packages/websocket/dist/index.js'
import { selfSigned } from '../../scripts/test/self-signed.js'
import { registerTickStreams } from '../../scripts/test/tick-streams.js'

const [items = '20000', rounds = '3'] = process.argv.slice(2)
const certificate = selfSigned()
const json = { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v }
const sum: EndpointSpec = {
  name: 'sum',
  method: 'POST',
  url: '/sum',
  request: json,
  response: json,
  streaming: false,
  requestStream: true,
}

async function serve(options: object, frames: boolean): Promise<FastifyInstance> {
  const app = Fastify(options) as unknown as FastifyInstance
  await app.register(triviumCore)
  if (frames) {
    await app.register(triviumWebSocket)
    await app.register(triviumTcp, { port: 0 })
  }
  registerTickStreams(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const port = (app: FastifyInstance) => (app.server.address() as { port: number }).port
const h1 = await serve({}, true)
const h2c = await serve(triviumHttp2Options('h2c'), false)
const tls = await serve(triviumHttp2Options({ key: certificate.key, cert: certificate.cert }), false)
const clients: [string, TriviumClient][] = [
  [
    'websocket',
    createClient({ transport: 'websocket', url: `ws://127.0.0.1:${port(h1)}/ws`, format: 'json' }),
  ],
  ['tcp', createClient({ transport: 'tcp', port: h1.triviumTcp.address()?.port as number, format: 'json' })],
  ['http2 h2c', createClient({ transport: 'http', url: `http://127.0.0.1:${port(h2c)}`, http2: true })],
  [
    'http2 tls',
    createClient({
      transport: 'http',
      url: `https://127.0.0.1:${port(tls)}`,
      http2: { tls: { ca: certificate.cert } },
    }),
  ],
]
const count = Number(items)
const best = new Map<string, number>()
for (let round = 0; round < Number(rounds); round++) {
  for (const [name, client] of clients) {
    const started = process.hrtime.bigint()
    const call = client.clientStream(sum)
    await call.sendAll(
      (function* () {
        for (let i = 0; i < count; i++) yield { i: 1 }
      })(),
    )
    const answer = (await call.response) as { count: number }
    if (answer.count !== count) throw new Error(`${name}: ${answer.count} of ${count} items arrived`)
    const rate = count / (Number(process.hrtime.bigint() - started) / 1e9)
    best.set(name, Math.max(best.get(name) ?? 0, rate))
  }
}
const tcpRate = best.get('tcp') as number
for (const [name, rate] of best) {
  console.log(
    `${name.padEnd(10)} ${Math.round(rate).toString().padStart(8)} items/s  (${(rate / tcpRate).toFixed(2)}× tcp)`,
  )
}
for (const [, client] of clients) await client.close()
await Promise.all([h1.close(), h2c.close(), tls.close()])
certificate.remove()
