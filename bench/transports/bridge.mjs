// The TCP inject bridge alone, in one process (no socket, no frame codec): calls/s of `hello` through
// the lean path (Node's HTTP server in memory, `fastify.routing`; issue 31) and through the app.inject()
// fallback, interleaved. `node bench/transports/bridge.mjs` (env BRIDGE_CALLS, default 50 000 per round).
import { createRequire } from 'node:module'

const pkg = (name) => new URL(`../../packages/${name}/dist/index.js`, import.meta.url).href
const Fastify = createRequire(new URL('../../packages/tcp/package.json', import.meta.url))('fastify')
const { default: core, jsonFormat, triviumFactoryOptions } = await import(pkg('core'))
const { Cancellation } = await import(pkg('wire'))
const { InjectBridge } = await import(new URL('../../packages/tcp/dist/inject.js', import.meta.url).href)

const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(core)
const paths = { lean: new InjectBridge(app), 'app.inject()': new InjectBridge(app, { lean: false }) }
app.trivium.endpoint('hello', { method: 'GET', url: '/hello', auth: 'public' }, () => ({ hello: 'world' }))
await app.ready()
const definition = app.trivium.registry.get('hello')
const override = { protocol: 'tcp', metadata: { format: 'json' }, clientIp: '127.0.0.1', connection: {} }
const payload = new Uint8Array(0)
const calls = Number(process.env.BRIDGE_CALLS ?? 50_000)
const results = { lean: [], 'app.inject()': [] }
for (let round = 0; round < 4; round++) {
  for (const [name, bridge] of Object.entries(paths)) {
    const started = performance.now()
    for (let i = 0; i < calls; i += 100) {
      const batch = []
      for (let j = 0; j < 100; j++)
        batch.push(
          bridge.call(definition, jsonFormat, jsonFormat, payload, override, new Cancellation(false)),
        )
      const outcomes = await Promise.all(batch)
      if (!outcomes[0].ok) throw new Error(`${name}: ${Buffer.from(outcomes[0].body)}`)
    }
    if (round > 0) results[name].push(calls / ((performance.now() - started) / 1000)) // round 0: warm-up
  }
}
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [name, xs] of Object.entries(results))
  console.log(name.padEnd(14), Math.round(median(xs)), 'calls/s')
console.log('lean / app.inject()', (median(results.lean) / median(results['app.inject()'])).toFixed(1))
await app.close()
