// Core registry + pipeline cost against bare Fastify (target ≥ 0.9× with no middleware).
import { compare, requireWrk, startServer } from '../lib/harness.mjs'

requireWrk()

const server = await startServer(new URL('./server.mjs', import.meta.url).pathname, { BENCH_MIDDLEWARE: '3' })
try {
  const url = (p) => `http://127.0.0.1:${server.port}${p}`
  await compare({
    title: 'core: GET returning {hello:"world"}',
    baseline: 'bare fastify route',
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
    duration: Number(process.env.BENCH_DURATION ?? 3),
    cases: [
      { name: 'bare fastify route', url: url('/bare'), pid: server.pid },
      { name: 'trivium endpoint, no middleware', url: url('/core'), pid: server.pid },
      { name: 'trivium endpoint, 3 no-op middleware', url: url('/core-mw'), pid: server.pid },
    ],
  })
} finally {
  await server.stop()
}
