// A service that gives `request.user` to Trivium (`requestUser: true`) and types it as Trivium's caller
// (packages/auth README "Protecting existing routes"), the way @fastify/jwt's `FastifyJWT` is augmented.
import triviumAuth, { triviumUser } from '@trivium/auth'
import trivium, { type TriviumIdentity } from '@trivium/core'
import Fastify from 'fastify'

declare module '@trivium/auth' {
  interface TriviumRequestUser {
    user: TriviumIdentity | undefined
  }
}

const app = Fastify()
await app.register(trivium)
await app.register(triviumAuth, { secret: 'x'.repeat(32), issuer: 'svc', requestUser: true })
app.get('/me', { config: { triviumRoute: {} } }, async (request) => {
  const user: TriviumIdentity | undefined = request.user
  return { id: user?.userId, same: user === triviumUser(request) }
})
