// Bench server: a bare Fastify route, a public Trivium endpoint and an authenticated one (Bearer token),
// in one process. BENCH_CACHE=0 turns the verified-token cache off. Prints `TOKEN <jwt>` for the client.
import trivium, { triviumFactoryOptions } from '@trivium/core'
import Fastify from 'fastify'
import triviumAuth from '../../packages/auth/dist/index.js'

const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(trivium)
await app.register(triviumAuth, {
  secret: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz',
  issuer: 'bench',
  verifiedCacheSize: process.env.BENCH_CACHE === '0' ? 0 : 10_000,
})
app.get('/bare', async () => ({ hello: 'world' }))
app.trivium.endpoint('hello', { method: 'GET', url: '/public', auth: 'public' }, () => ({ hello: 'world' }))
app.trivium.endpoint('me', { method: 'GET', url: '/me' }, () => ({ hello: 'world' }))
const token = await app.triviumAuth.issueAccessToken({
  id: 1,
  username: 'bench',
  email: 'bench@example.com',
  roles: ['user'],
  permissions: ['a.read', 'a.write'],
})
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
