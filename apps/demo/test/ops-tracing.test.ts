// Traces from the demo (issue 18): with OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach an OTLP/HTTP
// collector, continuing the caller's trace from `traceparent`.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { startOnPostgres } from './scale-helpers.js'

t.test('OTEL_EXPORTER_OTLP_ENDPOINT: spans of the caller trace reach the collector', async (t) => {
  const bodies: Buffer[] = []
  const collector = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.url === '/v1/traces') bodies.push(Buffer.concat(chunks))
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => collector.close(() => r())))
  const { port } = collector.address() as AddressInfo
  const demo = await startOnPostgres(t, 'otel', { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` })
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const res = await fetch(`${demo.base}/health`, {
    headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
  })
  t.equal(res.status, 200)
  const exported = () => Buffer.concat(bodies)
  // OTLP/HTTP protobuf carries the trace id as 16 bytes (JSON would carry the hex text).
  const hasTrace = () => exported().includes(Buffer.from(traceId, 'hex')) || exported().includes(traceId)
  // The exporter sends its batch within seconds; the wait only bounds a collector that never hears.
  const deadline = Date.now() + waitBound(60_000)
  while (!hasTrace() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  t.ok(hasTrace(), 'a span of the caller trace was exported')
  t.ok(exported().includes(Buffer.from('trivium.transport')), 'with the transport attribute')
  t.ok(exported().includes(Buffer.from('trivium-tasks')), 'under the service name')
})
