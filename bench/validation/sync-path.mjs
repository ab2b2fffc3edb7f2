#!/usr/bin/env node
// The synchronous call path with and without the asynchronous-model support, side by side in one process:
// `trivium.start()` of a unary endpoint with a JSON Schema request model (decode, validate, router, handler)
// on this checkout's build and on BENCH_BEFORE's (another built checkout), samples interleaved.
// Usage: BENCH_BEFORE=/path/to/old/checkout node bench/validation/sync-path.mjs [--ms 200] [--samples 9]
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const arg = (name, def) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? def : Number(process.argv[i + 1])
}
const SAMPLE_MS = arg('--ms', 200)
const SAMPLES = arg('--samples', 9)
const before = process.env.BENCH_BEFORE
if (!before) throw new Error('set BENCH_BEFORE to another built checkout')
const here = new URL('../..', import.meta.url).pathname

async function setup(root) {
  const core = join(root, 'packages/core')
  const load = (spec) => import(pathToFileURL(createRequire(join(core, 'package.json')).resolve(spec)).href)
  const { default: trivium, jsonSchemaModel } = await load('@trivium/core')
  const { jsonFormat } = await load('@trivium/core/internal')
  const { default: Fastify } = await load('fastify')
  const app = Fastify()
  await app.register(trivium)
  const request = jsonSchemaModel('Add', {
    type: 'object',
    properties: { a: { type: 'integer' }, b: { type: 'integer' } },
    required: ['a', 'b'],
  })
  app.trivium.endpoint('add', { method: 'POST', url: '/add', request }, (r) => ({ sum: r.a + r.b }))
  await app.ready()
  const init = {
    endpoint: 'add',
    protocol: 'tcp',
    payload: new TextEncoder().encode('{"a":2,"b":3}'),
    format: jsonFormat,
    requestId: '1',
    log: app.log,
  }
  return () => {
    if (app.trivium.start(init).result.sum !== 5) throw new Error('wrong sum')
  }
}

const runs = { before: await setup(before), after: await setup(here) }
function sample(fn) {
  let n = 0
  const start = performance.now()
  let now = start
  while (now - start < SAMPLE_MS) {
    for (let i = 0; i < 100; i++) fn()
    n += 100
    now = performance.now()
  }
  return n / ((now - start) / 1000)
}
for (const fn of Object.values(runs)) sample(fn)
const rates = { before: [], after: [] }
for (let s = 0; s < SAMPLES; s++) for (const [k, fn] of Object.entries(runs)) rates[k].push(sample(fn))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(
  `trivium.start() of a sync JSON Schema endpoint, ${SAMPLES} × ${SAMPLE_MS} ms, load ${loadavg()[0].toFixed(1)}`,
)
for (const k of ['before', 'after'])
  console.log(`${k}: ${Math.round(median(rates[k])).toLocaleString('en')} calls/s`)
console.log(`after / before: ${(median(rates.after) / median(rates.before)).toFixed(3)}`)
