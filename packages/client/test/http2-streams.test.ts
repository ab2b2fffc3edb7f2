// `@trivium/client/node` with `http2`: client and bidirectional streams over HTTP/2 (PROTOCOL.md "Over
// HTTP/2"), h2c and TLS, with the frame transports' handle: send/end/sendAll, the response or the items,
// the server's typed error, and cancel() resetting the stream (the handler's signal aborts).

import { createClient } from '@trivium/client/node'
import triviumCore, { triviumHttp2Options } from '@trivium/core'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { registerTickStreams, Tick } from '../../../scripts/test/tick-streams.js'
import { waitBound } from '../../../scripts/test/waits.js'
import { requestStreamSpec } from './fixture.js'

const certificate = selfSigned()
t.teardown(() => certificate.remove())

const spec = requestStreamSpec

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = Date.now() + waitBound(5000)
  while (!cond()) {
    if (Date.now() > end) throw new Error(`no ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

async function server(t: Test, lane: 'h2c' | 'tls') {
  let aborted = false
  const app = Fastify(
    lane === 'h2c'
      ? triviumHttp2Options('h2c')
      : triviumHttp2Options({ key: certificate.key, cert: certificate.cert }),
  ) as unknown as FastifyInstance
  await app.register(triviumCore)
  registerTickStreams(app)
  app.trivium.clientStream(
    'hold',
    { method: 'POST', url: '/hold', request: Tick },
    async (requests, call) => {
      call.signal.addEventListener('abort', () => {
        aborted = true
      })
      for await (const _ of requests) {
        // reads until the stream ends
      }
      return {}
    },
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const client = createClient({
    transport: 'http',
    url: `${lane === 'h2c' ? 'http' : 'https'}://127.0.0.1:${port}`,
    http2: { tls: { ca: certificate.cert } },
    format: 'json',
  })
  t.teardown(() => client.close())
  return { client, aborted: () => aborted }
}

for (const lane of ['h2c', 'tls'] as const) {
  t.test(`${lane}: client stream, bidirectional stream, errors and cancel`, async (t) => {
    const { client, aborted } = await server(t, lane)
    const sum = client.clientStream(spec('sum', false))
    t.equal(await sum.sendAll([{ i: 1 }, { i: 2 }, { i: 39 }]), true)
    t.same(await sum.response, { sum: 42, count: 3 })

    const double = client.bidiStream(spec('double', true))
    const seen: unknown[] = []
    const reading = (async () => {
      for await (const item of double) seen.push(item)
    })()
    await double.send({ i: 1 })
    await until(() => seen.length === 1, 'first item back before the half-close')
    await double.send({ i: 2 })
    await double.end()
    await reading
    t.same(seen, [{ i: 2 }, { i: 4 }], 'items come back while the request body is still open')

    const bad = client.clientStream(spec('sum', false))
    await bad.sendAll([{ i: 'x' }])
    await t.rejects(bad.response, {
      name: 'ValidationException',
      code: 'TRV_VALIDATION',
      message: 'Invalid Tick: i must be integer',
    })

    const hold = client.clientStream(spec('hold', false))
    await hold.send({ i: 1 })
    hold.cancel(new Error('changed my mind'))
    await t.rejects(hold.response, { message: 'changed my mind' })
    await until(aborted, "the handler's signal to abort")
    t.pass('cancel() reset the stream: the handler stopped')
  })
}
