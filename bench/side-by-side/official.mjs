// bench/side-by-side (f): the same authenticated + permission-checked `GET /secure` built from the official
// Fastify plugins: @fastify/helmet (security headers), @fastify/cors (allow-list with the bench Origin),
// @fastify/rate-limit (in memory, a limit the load cannot reach: checked and counted on every request),
// @fastify/jwt (HS256 pinned, Bearer token verified per request) and a preHandler checking the
// `permissions` claim. Prints `TOKEN <jwt>` then `LISTENING <port>`.
import cors from '@fastify/cors'
import helmet from '@fastify/helmet'
import jwt from '@fastify/jwt'
import rateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'

const app = Fastify({ logger: false })
await app.register(helmet)
await app.register(cors, { origin: ['https://app.example.com'] })
await app.register(rateLimit, { max: 1_000_000_000, timeWindow: 60_000 })
await app.register(jwt, {
  secret: 'bench-secret-bench-secret-bench-secret-0123',
  sign: { algorithm: 'HS256', iss: 'bench', expiresIn: '1h' },
  verify: { algorithms: ['HS256'], allowedIss: 'bench' },
})
async function requirePermission(request, reply) {
  try {
    await request.jwtVerify()
  } catch {
    return reply.code(401).send({ error: 'Unauthorized' })
  }
  if (!request.user.permissions?.includes('hello:read')) return reply.code(403).send({ error: 'Forbidden' })
}
app.get('/secure', { preHandler: requirePermission }, async () => ({ hello: 'world' }))
app.get('/public', async () => ({ hello: 'world' }))
await app.ready()
const token = app.jwt.sign({ sub: '1', username: 'bench', roles: ['member'], permissions: ['hello:read'] })
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
