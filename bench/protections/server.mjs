// Bench server: a bare Fastify route and a Trivium endpoint, with or without the whole protections
// stack (BENCH_PROTECTIONS=1: CORS + security headers + rate limit, memory store).
import trivium, { triviumFactoryOptions } from '@trivium/core'
import Fastify from 'fastify'
// bench/package.json does not list @trivium/protections; its built entry is imported directly.
import { triviumProtections } from '../../packages/protections/dist/index.js'

const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(trivium)
if (process.env.BENCH_PROTECTIONS === '1') {
  await app.register(triviumProtections, {
    cors: { allowedOrigins: ['*.example.com'] },
    // One client (the load generator) must never be refused during the run.
    rateLimit: { afterAuth: false, defaultLimit: { requests: 1_000_000_000, windowMs: 60_000 } },
  })
}
app.get('/bare', async () => ({ hello: 'world' }))
app.trivium.endpoint('hello', { method: 'GET', url: '/core' }, () => ({ hello: 'world' }))
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`LISTENING ${app.server.address().port}`)
