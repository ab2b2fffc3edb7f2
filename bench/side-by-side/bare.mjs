// bench/side-by-side (a) and (b): bare Fastify, `GET /hello` → {hello:"world"}.
// BENCH_HEADERS=1 (b): the same route plus every header the full Trivium stack must send on an allowed,
// authenticated response (spec "Security response headers", CORS for an allowed Origin, rate-limit
// headers), precomputed in one frozen object and set by one onRequest hook with `reply.headers`: the
// ceiling for any stack that sends the spec's headers. onRequest, not onSend: never the slower place for
// them, in two of three runs about 1 µs per request cheaper (bench/README.md "Where the headers are set").
// BENCH_HEADERS=onSend: the same headers set in an onSend hook instead, the case that shows the difference.
// BENCH_SPIN_NS=<n> (with BENCH_HEADERS=1): the ceiling plus n ns of busy JavaScript per request, the
// calibration case: what a known amount of JavaScript costs in server CPU per request on this machine.
import Fastify from 'fastify'
import { SPEC_HEADERS } from './headers.mjs'

const app = Fastify({ logger: false })
const spin = BigInt(process.env.BENCH_SPIN_NS ?? 0)
// The calibration case has a hook of its own, so the ceiling's hook stays exactly what it measures.
if (process.env.BENCH_HEADERS === '1' && spin > 0n) {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SPEC_HEADERS)
    const end = process.hrtime.bigint() + spin
    while (process.hrtime.bigint() < end);
    done()
  })
} else if (process.env.BENCH_HEADERS === '1') {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SPEC_HEADERS)
    done()
  })
} else if (process.env.BENCH_HEADERS === 'onSend') {
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(SPEC_HEADERS)
    done(null, payload)
  })
}
app.get('/hello', async () => ({ hello: 'world' }))
await app.listen({ port: 0, host: '127.0.0.1' })
console.log(`LISTENING ${app.server.address().port}`)
