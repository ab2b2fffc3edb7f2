// The TCP inject bridge alone, in one process (no socket, no frame codec): `hello` through each path of
// @trivium/tcp's InjectBridge, interleaved round by round, medians: `direct` (the default since
// 2026-11-26: Node's own IncomingMessage/ServerResponse built with their constructors, fastify.routing),
// `before` (BENCH_BEFORE=<another built checkout>: its bridge on the same app), and `app.inject()`
// (BRIDGE_INJECT=1; last, as its AsyncLocalStorage slows every promise of the process once used). Prints calls/s and the process's CPU µs per call (user + system) for each path, and the
// ratios. `node bench/transports/bridge.mjs` (env BRIDGE_CALLS per round, default 50 000; BRIDGE_ROUNDS,
// default 7; BRIDGE_APP=stack for the full stack's public endpoint instead of core alone, BRIDGE_APP=named
// for a named Fastify route on core alone).
import { createRequire } from 'node:module'

const pkg = (name) => new URL(`../../packages/${name}/dist/index.js`, import.meta.url).href
const Fastify = createRequire(new URL('../../packages/tcp/package.json', import.meta.url))('fastify')
const { default: core, triviumFactoryOptions } = await import(pkg('core'))
const { jsonFormat } = await import(new URL('../../packages/core/dist/internal.js', import.meta.url).href)
const { Cancellation } = await import(pkg('wire'))
const { InjectBridge } = await import(new URL('../../packages/tcp/dist/inject.js', import.meta.url).href)

let app
let name = 'hello'
if (process.env.BRIDGE_APP === 'stack') {
  const { createStackApp } = await import('../stack/app.mjs')
  app = await createStackApp()
  name = 'public.hello'
} else {
  app = Fastify({ ...triviumFactoryOptions(), logger: false })
  await app.register(core)
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello', auth: 'public' }, () => ({ hello: 'world' }))
  // BRIDGE_APP=named: a named Fastify route (issue 41) instead of the endpoint, through the same bridge.
  if (process.env.BRIDGE_APP === 'named') {
    const { default: auth } = await import(pkg('auth'))
    await app.register(auth, {
      secret: 'bench-secret-bench-secret-bench-secret!',
      issuer: 'bench',
      cleanupIntervalMs: 0,
    })
    const named = { config: { triviumRoute: { name: 'named.hello', auth: 'public' } } }
    app.get('/named-hello', named, async () => ({ hello: 'world' }))
    name = 'named.hello'
  }
}
const paths = { direct: new InjectBridge(app) }
if (process.env.BENCH_BEFORE) {
  // Another built checkout's bridge on the same app, interleaved. Not like for like: that bridge imports
  // its own @trivium/core, whose marks this app's core does not know, so its calls take another path (the
  // same build loaded from a copy measured 2.1× this one's CPU per call, 2026-11-28). To compare builds,
  // run this file from each tree in turn (bench/README.md, "Transport cost per message").
  const before = new URL(`file://${process.env.BENCH_BEFORE}/packages/tcp/dist/inject.js`).href
  paths.before = new (await import(before).then((m) => m.InjectBridge))(app)
}
const late =
  process.env.BRIDGE_INJECT === '1' ? { 'app.inject()': new InjectBridge(app, { lean: false }) } : {}
await app.ready()
const definition = app.trivium.registry.get(name)
if (definition === undefined)
  throw new Error(`no endpoint ${name}: ${app.trivium.registry.list().map((d) => d.name)}`)
const override = { protocol: 'tcp', metadata: { format: 'json' }, clientIp: '127.0.0.1', connection: {} }
const payload = new Uint8Array(0)
const calls = Number(process.env.BRIDGE_CALLS ?? 50_000)
const rounds = Number(process.env.BRIDGE_ROUNDS ?? 7)
const results = {}
const cpu = {}

/** One call: an options object (since issue 43), or the positional form of a BENCH_BEFORE build. */
function callOnce(bridge) {
  const entry = new Cancellation(false)
  if (bridge.call.length > 3) return bridge.call(definition, jsonFormat, jsonFormat, payload, override, entry)
  return bridge.call({
    definition,
    format: jsonFormat,
    accept: jsonFormat,
    payload,
    override,
    entry,
    requestId: 'b:1',
  })
}

async function run(label, bridge) {
  const started = performance.now()
  const used = process.cpuUsage()
  for (let i = 0; i < calls; i += 100) {
    const batch = []
    for (let j = 0; j < 100; j++) batch.push(callOnce(bridge))
    const outcomes = await Promise.all(batch)
    if (!outcomes[0].ok) throw new Error(`${label}: ${Buffer.from(outcomes[0].body)}`)
    // A new turn of the event loop, as a server's next read is (bench/README.md, js-path).
    await new Promise(setImmediate)
  }
  const spent = process.cpuUsage(used)
  return [calls / ((performance.now() - started) / 1000), (spent.user + spent.system) / calls]
}

async function measure(set) {
  for (let round = 0; round <= rounds; round++) {
    for (const [label, bridge] of Object.entries(set)) {
      const [rate, us] = await run(label, bridge)
      if (round === 0) continue // warm-up
      results[label] = [...(results[label] ?? []), rate]
      cpu[label] = [...(cpu[label] ?? []), us]
    }
  }
}
await measure(paths)
await measure(late)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const label of Object.keys(results))
  console.log(
    label.padEnd(14),
    String(Math.round(median(results[label]))).padStart(8),
    'calls/s',
    median(cpu[label]).toFixed(2).padStart(7),
    'CPU µs/call',
  )
for (const other of Object.keys(results).filter((label) => label !== 'direct'))
  console.log(
    `direct / ${other}: calls/s`,
    (median(results.direct) / median(results[other])).toFixed(2),
    '×, CPU per call',
    (median(cpu.direct) / median(cpu[other])).toFixed(2),
    '×',
  )
await app.close()
