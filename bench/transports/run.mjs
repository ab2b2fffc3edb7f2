// Requests/s of one endpoint over HTTP, WebSocket, TCP direct and TCP inject, next to a bare Fastify
// route and raw `ws` / `net` echo ceilings, all measured in the same run: server on CPU 0, load on
// CPU 1, interleaved rounds, medians, printed as ratios. Not part of the test suite.
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { load, median } from '../lib/harness.mjs'

const here = new URL('.', import.meta.url).pathname
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const duration = Number(process.env.BENCH_DURATION ?? 3)
const connections = 50
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0
const pin = (cpu, args) => (hasTaskset ? ['taskset', ['-c', String(cpu), ...args]] : [args[0], args.slice(1)])

const [cmd, args] = pin(0, [process.execPath, `${here}server.mjs`])
const server = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] })
let out = ''
const ports = await new Promise((resolve, reject) => {
  server.stdout.on('data', (c) => {
    out += c
    const m = /PORTS (\{.*\})/.exec(out)
    if (m) resolve(JSON.parse(m[1]))
  })
  server.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
})

function frames(kind, port, seconds) {
  const [c, a] = pin(1, [
    process.execPath,
    `${here}client.mjs`,
    kind,
    String(port),
    String(seconds),
    String(connections),
  ])
  const r = spawnSync(c, a, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').at(-1))
}

const http = (path) => (s) => load({ url: `http://127.0.0.1:${ports.http}${path}`, duration: s, connections })
const cases = [
  ['bare fastify route (HTTP)', http('/bare')],
  ['trivium HTTP', http('/hello')],
  ['trivium WebSocket', (s) => frames('ws', ports.http, s)],
  ['trivium TCP direct', (s) => frames('tcp', ports.tcpDirect, s)],
  ['trivium TCP inject', (s) => frames('tcp', ports.tcpInject, s)],
  ['raw ws echo (ceiling)', (s) => frames('ws', ports.wsRaw, s)],
  ['raw net echo, batched (ceiling)', (s) => frames('tcp', ports.netRaw, s)],
]
try {
  const samples = Object.fromEntries(cases.map(([n]) => [n, []]))
  for (const [, run] of cases) run(1) // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of cases) {
      const res = run(duration)
      if (res.errors || res.non2xx)
        console.warn(`  ! ${name}: errors ${res.errors ?? 0}, non-2xx ${res.non2xx ?? 0}`)
      samples[name].push(res.rps)
    }
  }
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))
  console.log(
    `\ntransports: GET hello → {"hello":"world"}, JSON (${rounds} interleaved rounds × ${duration}s, ${connections} connections × 1 in flight, medians)`,
  )
  for (const [name] of cases) console.log(name.padEnd(34), String(Math.round(m[name])).padStart(8), 'req/s')
  const ratio = (a, b) => (m[a] / m[b]).toFixed(2)
  console.log('\nratios')
  console.log('HTTP / bare fastify          ', ratio('trivium HTTP', 'bare fastify route (HTTP)'))
  console.log('WebSocket / HTTP   (≥ 1.2)   ', ratio('trivium WebSocket', 'trivium HTTP'))
  console.log('TCP direct / HTTP  (≥ 1.5)   ', ratio('trivium TCP direct', 'trivium HTTP'))
  console.log('TCP inject / HTTP  (≥ 0.8)   ', ratio('trivium TCP inject', 'trivium HTTP'))
  console.log('TCP direct / bare fastify    ', ratio('trivium TCP direct', 'bare fastify route (HTTP)'))
  console.log('WebSocket / raw ws (≥ 0.5)   ', ratio('trivium WebSocket', 'raw ws echo (ceiling)'))
  console.log('TCP direct / raw net (≥ 0.5) ', ratio('trivium TCP direct', 'raw net echo, batched (ceiling)'))
} finally {
  server.kill('SIGTERM')
  await once(server, 'exit')
}
