// Bench server: the whole Trivium stack (stack/app.mjs: core + codec + auth + RBAC middleware + rate
// limiting + security headers + CORS), one process; prints `TOKEN` for `GET /secure`.
// BENCH_METRICS=1: the same stack with @trivium/metrics observing every call (issue 18: within 3%).
import { createStackApp, issueBenchToken } from './app.mjs'

const app = await createStackApp({ metrics: process.env.BENCH_METRICS === '1' })
await app.ready()
const token = await issueBenchToken(app)
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.server.address().port}`)
