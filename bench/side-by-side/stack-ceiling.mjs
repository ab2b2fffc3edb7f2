// bench/side-by-side: the ceiling route (bare Fastify + the spec headers in one onRequest hook, as
// bare.mjs with BENCH_HEADERS=1) in a process that also runs the full Trivium stack of
// bench/stack/server.mjs. The two sit in sibling encapsulated contexts, so the ceiling route runs none of
// Trivium's hooks: it does the ceiling's work per request in the full stack's process (its modules, heap
// and the shapes Fastify's shared functions see). Against the ceiling alone, this shows what the
// process layout costs; against the full stack, what Trivium's per-request work costs.
import triviumAuth from '@trivium/auth'
import triviumCodec from '@trivium/codec'
import trivium from '@trivium/core'
import triviumProtections from '@trivium/protections'
import { createRbacMiddleware } from '@trivium/rbac'
import Fastify from 'fastify'
import { SPEC_HEADERS } from './headers.mjs'

const app = Fastify({ logger: false })
let issueToken
await app.register(async (stack) => {
  await stack.register(trivium)
  await stack.register(triviumCodec)
  await stack.register(triviumAuth, {
    secret: 'bench-secret-bench-secret-bench-secret-0123',
    issuer: 'bench',
  })
  stack.trivium.use(createRbacMiddleware(), { name: 'rbac', after: ['auth'] })
  await stack.register(triviumProtections, {
    rateLimit: { defaultLimit: { requests: 1e9, windowMs: 60_000 } },
  })
  stack.trivium.endpoint('public.hello', { method: 'GET', url: '/public', auth: 'public' }, () => ({
    hello: 'world',
  }))
  stack.trivium.endpoint(
    'secure.hello',
    { method: 'GET', url: '/secure', permissions: ['hello:read'] },
    () => ({ hello: 'world' }),
  )
  issueToken = () =>
    stack.triviumAuth.issueAccessToken({
      id: 1,
      username: 'bench',
      email: 'bench@example.com',
      roles: ['member'],
      permissions: ['hello:read'],
    })
})
await app.register(async (ceiling) => {
  ceiling.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SPEC_HEADERS)
    done()
  })
  ceiling.get('/hello', async () => ({ hello: 'world' }))
})
await app.ready()
const token = await issueToken()
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
