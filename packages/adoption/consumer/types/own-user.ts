// An existing service that types `request.user` itself (as with @fastify/jwt): @trivium/auth must not
// contradict it (issue 33 item 1: TS2717 in the service's own code, even with skipLibCheck).
import triviumAuth from '@trivium/auth'
import trivium from '@trivium/core'
import Fastify from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    user: { sub: string; scopes: string[] }
  }
}

const app = Fastify()
await app.register(trivium)
await app.register(triviumAuth, { secret: 'x'.repeat(32), issuer: 'svc' })
app.get('/me', async (request) => ({ sub: request.user.sub, scopes: request.user.scopes }))
