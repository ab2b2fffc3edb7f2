// Cost of the whole protections stack (CORS with an allowed Origin, the seven security headers, rate
// limiting on the memory store) against the same app without it. Target from issue 7: < 10 µs/request.
import { compare, requireWrk, startServer } from '../lib/harness.mjs'

requireWrk()

const script = new URL('./server.mjs', import.meta.url).pathname
const plain = await startServer(script, { BENCH_PROTECTIONS: '0' })
const guarded = await startServer(script, { BENCH_PROTECTIONS: '1' })
try {
  const headers = { origin: 'https://app.example.com' }
  const rows = await compare({
    title: 'protections: GET returning {hello:"world"}, Origin allowed',
    baseline: 'bare fastify route',
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
    duration: Number(process.env.BENCH_DURATION ?? 3),
    cases: [
      { name: 'bare fastify route', url: `http://127.0.0.1:${plain.port}/bare`, headers, pid: plain.pid },
      {
        name: 'fastify route + cors + headers',
        url: `http://127.0.0.1:${guarded.port}/bare`,
        headers,
        pid: guarded.pid,
      },
      { name: 'trivium endpoint', url: `http://127.0.0.1:${plain.port}/core`, headers, pid: plain.pid },
      {
        name: 'trivium endpoint + all protections',
        url: `http://127.0.0.1:${guarded.port}/core`,
        headers,
        pid: guarded.pid,
      },
    ],
  })
  const rps = Object.fromEntries(rows.map((r) => [r.name, r.rps]))
  const us = (a, b) => (1e6 / rps[b] - 1e6 / rps[a]).toFixed(1)
  console.log(`\ncost per request (1/rps difference, one server core):`)
  console.log(
    `  cors + security headers on a plain route: ${us('bare fastify route', 'fastify route + cors + headers')} µs`,
  )
  console.log(
    `  all protections on a trivium endpoint:    ${us('trivium endpoint', 'trivium endpoint + all protections')} µs`,
  )
  console.log(
    `  ratio endpoint+protections / endpoint:     ${(rps['trivium endpoint + all protections'] / rps['trivium endpoint']).toFixed(2)}`,
  )
  // The same from the server's own CPU time per request: independent of the generator, less sensitive
  // to other load on the machine than req/s (contention still inflates it).
  const cpu = Object.fromEntries(rows.map((r) => [r.name, r.cpuUsPerRequest]))
  const cpuUs = (a, b) => (cpu[b] - cpu[a]).toFixed(1)
  console.log(`cost per request (server CPU µs/request difference):`)
  console.log(
    `  cors + security headers on a plain route: ${cpuUs('bare fastify route', 'fastify route + cors + headers')} µs`,
  )
  console.log(
    `  all protections on a trivium endpoint:    ${cpuUs('trivium endpoint', 'trivium endpoint + all protections')} µs`,
  )
} finally {
  await plain.stop()
  await guarded.stop()
}
