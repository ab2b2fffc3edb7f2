// The whole platform stack against bare Fastify (target ≥ 0.6×): an authenticated endpoint with a
// permission check, rate limiting, security headers and CORS, and a public endpoint through the same stack.
import { compare, requireWrk, startServer } from '../lib/harness.mjs'

requireWrk()

// The baseline runs in its own process: the stack's global hooks (headers, CORS) would apply to a
// bare route registered in the same instance.
const bare = await startServer(new URL('../core/server.mjs', import.meta.url).pathname)
const server = await startServer(new URL('./server.mjs', import.meta.url).pathname)
// The same stack with @trivium/metrics registered, for the metrics-on / metrics-off ratio.
const metered = await startServer(new URL('./server.mjs', import.meta.url).pathname, { BENCH_METRICS: '1' })
try {
  const url = (p) => `http://127.0.0.1:${server.port}${p}`
  const auth = { authorization: `Bearer ${server.lines.find((l) => l.startsWith('TOKEN ')).slice(6)}` }
  await compare({
    title: 'whole stack: GET returning {hello:"world"}',
    baseline: 'bare fastify route',
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
    duration: Number(process.env.BENCH_DURATION ?? 3),
    cases: [
      { name: 'bare fastify route', url: `http://127.0.0.1:${bare.port}/bare`, pid: bare.pid },
      {
        name: 'stack, public endpoint',
        url: url('/public'),
        pid: server.pid,
        headers: { origin: 'https://app.example.com' },
      },
      {
        name: 'stack, authenticated + permission',
        url: url('/secure'),
        pid: server.pid,
        headers: { ...auth, origin: 'https://app.example.com' },
      },
    ],
  })
  const meteredAuth = {
    authorization: `Bearer ${metered.lines.find((l) => l.startsWith('TOKEN ')).slice(6)}`,
  }
  await compare({
    title: 'metrics cost: whole stack with @trivium/metrics on vs off (target ≥ 0.97×)',
    baseline: 'stack, metrics off',
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
    duration: Number(process.env.BENCH_DURATION ?? 3),
    cases: [
      { name: 'stack, metrics off', url: url('/secure'), pid: server.pid, headers: auth },
      {
        name: 'stack, metrics on',
        url: `http://127.0.0.1:${metered.port}/secure`,
        pid: metered.pid,
        headers: meteredAuth,
      },
    ],
  })
} finally {
  await metered.stop()
  await server.stop()
  await bare.stop()
}
