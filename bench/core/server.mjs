// Bench server: a bare Fastify route and the same answer through a Trivium endpoint, in one process.

import trivium, { triviumFactoryOptions } from '@trivium/core'
import Fastify from 'fastify'

const app = Fastify({ ...triviumFactoryOptions(), logger: false })
await app.register(trivium)
app.get('/bare', async () => ({ hello: 'world' }))
app.trivium.endpoint('hello', { method: 'GET', url: '/core' }, () => ({ hello: 'world' }))
if (process.env.BENCH_MIDDLEWARE) {
  for (let i = 0; i < Number(process.env.BENCH_MIDDLEWARE); i++)
    app.trivium.use(async (_call, next) => next())
  app.trivium.endpoint('hello.mw', { method: 'GET', url: '/core-mw' }, () => ({ hello: 'world' }))
}
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`LISTENING ${app.server.address().port}`)
