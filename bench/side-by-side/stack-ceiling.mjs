// bench/side-by-side: the ceiling route (bare Fastify + the spec headers in one onRequest hook, as
// bare.mjs with BENCH_HEADERS=1) in a process that also runs the full Trivium stack of
// bench/stack/app.mjs. The two sit in sibling encapsulated contexts, so the ceiling route runs none of
// Trivium's hooks: it does the ceiling's work per request in the full stack's process (its modules, heap
// and the shapes Fastify's shared functions see). Against the ceiling alone, this shows what the
// process layout costs; against the full stack, what Trivium's per-request work costs.
import { issueBenchToken, registerStack } from '../stack/app.mjs'
import { SPEC_HEADERS } from './headers.mjs'

const { default: Fastify } = await import('fastify') // after the Trivium packages, as in stack/server.mjs
const app = Fastify({ logger: false })
let stackContext
await app.register(async (stack) => {
  await registerStack(stack)
  stackContext = stack
})
await app.register(async (ceiling) => {
  ceiling.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SPEC_HEADERS)
    done()
  })
  ceiling.get('/hello', async () => ({ hello: 'world' }))
})
await app.ready()
const token = await issueBenchToken(stackContext)
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
