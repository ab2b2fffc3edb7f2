// The client's calls for streams of requests are chosen by the endpoint's spec (PROTOCOL.md "Client and
// bidirectional streams"): the wrong call, or one over HTTP, is a ClientUsageError naming the right one,
// thrown before anything is sent.
import { createClient, type EndpointSpec } from '@trivium/client/node'
import t from 'tap'

const json = { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v }
const spec = (name: string, streaming: boolean, requestStream: boolean): EndpointSpec => ({
  name,
  method: 'POST',
  url: `/${name}`,
  request: json,
  response: json,
  streaming,
  requestStream,
})
const sum = spec('sum', false, true)
const double = spec('double', true, true)
const echo = spec('echo', false, false)
const ticks = spec('ticks', true, false)
const usage = (message: string) => ({ name: 'ClientUsageError', code: 'TRV_CLIENT_USAGE', message })

t.test('the call must match the endpoint', async (t) => {
  // Port 1: nothing listens; none of these connects.
  const client = createClient({ transport: 'tcp', port: 1, reconnectAttempts: 0 })
  t.teardown(() => client.close())
  await t.rejects(client.call(sum), usage('Endpoint sum takes a stream of requests: use clientStream()'))
  t.throws(() => client.stream(double), usage('Endpoint double takes a stream of requests: use bidiStream()'))
  t.throws(() => client.bidiStream(sum), usage('Endpoint sum takes a stream of requests: use clientStream()'))
  t.throws(
    () => client.clientStream(double),
    usage('Endpoint double takes a stream of requests: use bidiStream()'),
  )
  t.throws(
    () => client.clientStream(echo),
    usage('Endpoint echo does not take a stream of requests: use call()'),
  )
  t.throws(
    () => client.bidiStream(ticks),
    usage('Endpoint ticks does not take a stream of requests: use stream()'),
  )
})

t.test('send after end is refused; a stream that cannot connect fails with NetworkException', async (t) => {
  const client = createClient({ transport: 'tcp', port: 1, reconnectAttempts: 0 })
  t.teardown(() => client.close())
  const stream = client.clientStream(sum)
  await stream.end()
  await t.rejects(stream.send({ n: 1 }), usage('send() after end() on the stream to sum'))
  await t.rejects(stream.response, { name: 'NetworkException' })
})

t.test('HTTP/1.1 refuses streams of requests', async (t) => {
  const client = createClient({ transport: 'http', url: 'http://127.0.0.1:1' })
  t.teardown(() => client.close())
  const refusal = (name: string) =>
    usage(`Endpoint ${name} takes a stream of requests: call it over WebSocket or TCP`)
  t.throws(() => client.clientStream(sum), refusal('sum'))
  t.throws(() => client.bidiStream(double), refusal('double'))
})
