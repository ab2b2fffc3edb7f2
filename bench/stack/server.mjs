// Bench server: a bare Fastify route next to the same answer through the whole Trivium stack
// (core + codec + auth + RBAC middleware + rate limiting + security headers + CORS), one process.
import triviumAuth from '@trivium/auth'
import triviumCodec from '@trivium/codec'
import trivium from '@trivium/core'
import triviumMetrics from '@trivium/metrics'
import triviumProtections from '@trivium/protections'
import { createRbacMiddleware } from '@trivium/rbac'
import Fastify from 'fastify'

const app = Fastify({ logger: false })
await app.register(trivium)
await app.register(triviumCodec)
// BENCH_METRICS=1: the same stack with @trivium/metrics observing every call (issue 18: within 3%).
if (process.env.BENCH_METRICS === '1') await app.register(triviumMetrics, { expose: true })
await app.register(triviumAuth, { secret: 'bench-secret-bench-secret-bench-secret-0123', issuer: 'bench' })
app.trivium.use(createRbacMiddleware(), { name: 'rbac', after: ['auth'] })
// A limit the load cannot reach: the counter is still checked and updated on every request.
await app.register(triviumProtections, { rateLimit: { defaultLimit: { requests: 1e9, windowMs: 60_000 } } })
app.trivium.endpoint('public.hello', { method: 'GET', url: '/public', auth: 'public' }, () => ({
  hello: 'world',
}))
app.trivium.endpoint('secure.hello', { method: 'GET', url: '/secure', permissions: ['hello:read'] }, () => ({
  hello: 'world',
}))
await app.ready()
const token = await app.triviumAuth.issueAccessToken({
  id: 1,
  username: 'bench',
  email: 'bench@example.com',
  roles: ['member'],
  permissions: ['hello:read'],
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
