// Instructions per call through the route bridge (issue 41, item 5), counted by valgrind's callgrind:
// load-independent, where CPU time per call moves with the machine's load. Two cases, each in its own
// process on the same app (core + auth, as bench/transports/server.mjs): `endpoint` is `hello` through the
// bridge of TCP inject mode (its onRequest hook on every route), `named` the named Fastify route
// `named.hello` through the frame transports' bridge of named routes (no hook). Instrumentation is on only
// for the measured calls (after BRIDGE_WARMUP calls), as in bench/js-path/instructions.mjs.
//
// Node runs `--single-threaded`: V8's background compiler and GC threads would otherwise add their own,
// varying, instructions to the count (callgrind counts every thread).
//
//   node bench/transports/bridge-instructions.mjs        (env BRIDGE_CASES=endpoint,named,plain
//        BRIDGE_IR_CALLS=5000 BRIDGE_WARMUP=20000 BRIDGE_WEBSOCKET=1 BENCH_BEFORE=<another built checkout>: its packages,
//        run by this file)
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { gatedInstructions } from '../lib/callgrind.mjs'

const which = process.argv[2]
if (which === undefined) {
  const cases = (process.env.BRIDGE_CASES ?? 'endpoint,named').split(',').filter(Boolean)
  const calls = Number(process.env.BRIDGE_IR_CALLS ?? 5000)
  const trees = [['now', new URL('../..', import.meta.url).pathname]]
  if (process.env.BENCH_BEFORE) trees.push(['before', process.env.BENCH_BEFORE])
  const runs = cases.flatMap((c) => trees.map(([tree, root]) => ({ c, tree, root })))
  const counted = await Promise.all(runs.map(({ c, root }) => count(root, c, calls)))
  for (const [i, { c, tree }] of runs.entries())
    console.log(
      `${c.padEnd(9)} ${tree.padEnd(7)} ${Math.round(counted[i]).toString().padStart(8)} instructions/call`,
    )
} else {
  await serve(which)
}

/** Instructions of `calls` calls of one case, in one process under callgrind (gated, see above). */
function count(root, c, calls) {
  const command = [process.execPath, '--single-threaded', new URL(import.meta.url).pathname, c]
  const env = { ...process.env, BRIDGE_IR_CALLS: String(calls), BRIDGE_TREE: root }
  return gatedInstructions(command, env, calls, c)
}

/** The child: warm up, say WARM, wait, run the measured calls, say DONE, wait. */
async function serve(c) {
  const root = new URL(`file://${process.env.BRIDGE_TREE ?? new URL('../..', import.meta.url).pathname}/`)
  const pkg = (name, file = 'index.js') => new URL(`packages/${name}/dist/${file}`, root).href
  const Fastify = createRequire(new URL('packages/tcp/package.json', root))('fastify')
  const { default: core, triviumFactoryOptions } = await import(pkg('core'))
  const { jsonFormat } = await import(pkg('core', 'internal.js'))
  const { Cancellation } = await import(pkg('wire'))
  const { default: auth } = await import(pkg('auth'))
  const { InjectBridge } = await import(pkg('frame-session'))
  const app = Fastify({ ...triviumFactoryOptions(), logger: false })
  await app.register(core)
  await app.register(auth, {
    secret: 'bench-secret-bench-secret-bench-secret!',
    issuer: 'bench',
    cleanupIntervalMs: 0,
  })
  // BRIDGE_WEBSOCKET=1: @trivium/websocket registered too, as on bench/transports/server.mjs's main app
  // (its app-wide onRequest/onResponse hooks run for every request of the app, named route calls included)
  if (process.env.BRIDGE_WEBSOCKET === '1') await app.register((await import(pkg('websocket'))).default)
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello', auth: 'public' }, () => ({ hello: 'world' }))
  const named = { config: { triviumRoute: { name: 'named.hello', auth: 'public' } } }
  app.get('/named-hello', named, async () => ({ hello: 'world' }))
  // `plain`: the same route without `config.triviumRoute` (no guard), reached with the named route's
  // mapping: what Fastify's route itself costs (hooks, async handler, serialization).
  app.get('/plain-hello', async () => ({ hello: 'world' }))
  const bridge = c === 'endpoint' ? new InjectBridge(app) : new InjectBridge(app, { markRequests: false })
  await app.ready()
  let definition = app.trivium.registry.get(c === 'endpoint' ? 'hello' : 'named.hello')
  if (c === 'plain') definition = { ...definition, http: { ...definition.http, url: '/plain-hello' } }
  const override = { protocol: 'tcp', metadata: { format: 'json' }, clientIp: '127.0.0.1', connection: {} }
  const payload = new Uint8Array(0)
  const batch = async (n) => {
    for (let i = 0; i < n; i += 50) {
      const calls = []
      for (let j = 0; j < 50; j++) {
        const entry = new Cancellation(false)
        calls.push(
          bridge.call({
            definition,
            format: jsonFormat,
            accept: jsonFormat,
            payload,
            override,
            entry,
            requestId: 'b:1',
          }),
        )
      }
      const outcomes = await Promise.all(calls)
      if (!outcomes[0].ok) throw new Error(`${c}: ${Buffer.from(outcomes[0].body)}`)
      await new Promise(setImmediate)
    }
  }
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  await batch(Number(process.env.BRIDGE_WARMUP ?? 20_000))
  process.stdout.write('WARM\n')
  await lines.next()
  await batch(Number(process.env.BRIDGE_IR_CALLS ?? 5000))
  process.stdout.write('DONE\n')
  await lines.next()
  await app.close()
  process.exit(0)
}
