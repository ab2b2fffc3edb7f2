// Client and bidirectional streams over HTTP/2 on real sockets (PROTOCOL.md "Client and bidirectional
// streams", "Over HTTP/2"): the exchange (envelopes in the request body, the answer or envelopes back) on h2c
// and TLS, and every refusal of a client that breaks the rules — an item past the size limit, a malformed
// envelope (flags, truncated, huge length), an item that is not UTF-8 or not JSON, a body never half-closed
// past the deadline, RST_STREAM mid-stream (the handler stops, nothing commits). HTTP/1.1 keeps refusing.
import http2 from 'node:http2'
import https from 'node:https'
import triviumCore, { triviumHttp2Options } from '@trivium/core'
import { encodeEnvelope } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { registerTickStreams, Tick } from '../../../scripts/test/tick-streams.js'
import { until } from './raw-frames.ts'

const certificate = selfSigned()
t.teardown(() => certificate.remove())

const item = (value: unknown) => encodeEnvelope(0, Buffer.from(JSON.stringify(value)))
const validation = (message: string) => ({
  statusCode: 400,
  code: 'TRV_VALIDATION',
  error: 'ValidationException',
  message,
})

interface Server {
  app: FastifyInstance
  origin: string
  /** What `slow` committed (it commits only after its last item) and whether its signal aborted. */
  committed: number[]
  aborted: () => boolean
  /** Items `slow` has taken. */
  taken: () => number
}

async function server(t: Test, lane: 'h2c' | 'tls'): Promise<Server> {
  const committed: number[] = []
  let aborted = false
  let taken = 0
  const app = Fastify(
    lane === 'h2c'
      ? triviumHttp2Options('h2c')
      : triviumHttp2Options({ key: certificate.key, cert: certificate.cert }),
  ) as unknown as FastifyInstance
  await app.register(triviumCore)
  registerTickStreams(app, { bodyLimit: 64 })
  app.trivium.clientStream(
    'deadline',
    { method: 'POST', url: '/deadline', request: Tick, timeoutMs: 100 },
    async (requests: AsyncIterable<{ i: number }>) => {
      for await (const _ of requests) {
        // the client never half-closes
      }
      return { sum: 0, count: 0 }
    },
  )
  // Commits what it read only after the half-close: a stream reset before that commits nothing.
  app.trivium.clientStream(
    'slow',
    { method: 'POST', url: '/slow', request: Tick },
    async (requests: AsyncIterable<{ i: number }>, call) => {
      call.signal.addEventListener('abort', () => {
        aborted = true
      })
      const seen: number[] = []
      for await (const tick of requests) {
        seen.push(tick.i)
        taken++
      }
      committed.push(...seen)
      return { sum: 0, count: seen.length }
    },
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = (app.server.address() as { port: number }).port
  const scheme = lane === 'h2c' ? 'http' : 'https'
  return {
    app,
    origin: `${scheme}://127.0.0.1:${port}`,
    committed,
    aborted: () => aborted,
    taken: () => taken,
  }
}

interface Answer {
  status: number
  contentType: unknown
  body: Buffer
}

function session(t: Test, origin: string): http2.ClientHttp2Session {
  const s = http2.connect(origin, { ca: certificate.cert })
  s.on('error', () => {})
  t.teardown(() => s.close())
  return s
}

/** One stream: `chunks` written, then the body ended unless `end` is false; resolves with the answer. */
function exchange(
  s: http2.ClientHttp2Session,
  path: string,
  chunks: Uint8Array[],
  end = true,
  contentType = 'application/trivium-stream+json',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = s.request({ ':method': 'POST', ':path': path, 'content-type': contentType })
    let status = 0
    let type: unknown
    const body: Buffer[] = []
    stream.on('response', (head) => {
      status = Number(head[':status'])
      type = head['content-type']
    })
    stream.on('data', (chunk: Buffer) => body.push(chunk))
    stream.on('close', () => resolve({ status, contentType: type, body: Buffer.concat(body) }))
    stream.on('error', reject)
    for (const chunk of chunks) stream.write(chunk)
    if (end) stream.end()
  })
}

const json = (answer: Answer) => {
  const { requestId: _id, ...body } = JSON.parse(answer.body.toString('utf8'))
  return body
}

for (const lane of ['h2c', 'tls'] as const) {
  t.test(`${lane}: a client stream and a bidirectional stream`, async (t) => {
    const { origin } = await server(t, lane)
    const s = session(t, origin)
    const sum = await exchange(s, '/sum', [item({ i: 1 }), item({ i: 2 }), item({ i: 39 })])
    t.equal(sum.status, 200)
    t.equal(sum.contentType, 'application/json; charset=utf-8')
    t.same(JSON.parse(sum.body.toString()), { sum: 42, count: 3 })
    const double = await exchange(s, '/double', [item({ i: 1 }), item({ i: 2 })])
    t.equal(double.status, 200)
    t.equal(double.contentType, 'application/trivium-stream+json')
    t.equal(
      double.body.toString('hex'),
      '00000000077b2269223a327d' + '00000000077b2269223a347d' + '02000000027b7d',
      'two item envelopes, then the end envelope {}',
    )
  })

  t.test(`${lane}: an item past the size limit, and malformed envelopes`, async (t) => {
    const { origin } = await server(t, lane)
    const s = session(t, origin)
    const big = await exchange(s, '/sum', [encodeEnvelope(0, Buffer.from(`{"i":${'1'.repeat(70)}}`))])
    t.equal(big.status, 413)
    t.same(json(big), {
      statusCode: 413,
      code: 'TRV_PAYLOAD_TOO_LARGE',
      error: 'PayloadTooLargeException',
      message: 'Stream item of 76 bytes is larger than the limit of 64 bytes',
    })
    // A huge length is refused from its header, before any of its bytes (the body is never ended).
    const huge = await exchange(s, '/sum', [Buffer.from([0, 0xff, 0xff, 0xff, 0xff])], false)
    t.equal(huge.status, 413)
    t.equal(json(huge).message, 'Stream item of 4294967295 bytes is larger than the limit of 64 bytes')
    const flags = await exchange(s, '/sum', [encodeEnvelope(1, Buffer.from('{"i":1}'))])
    t.equal(flags.status, 400)
    t.same(json(flags), validation('Malformed stream envelope: flags 0x01 (expected 0x00)'))
    const truncated = await exchange(s, '/sum', [item({ i: 1 }).subarray(0, 9)])
    t.same(
      json(truncated),
      validation('Malformed stream envelope: the body ended inside an item (4 of 7 bytes)'),
    )
    const header = await exchange(s, '/sum', [Buffer.from([0, 0, 0])])
    t.same(
      json(header),
      validation('Malformed stream envelope: the body ended inside an envelope header (3 of 5 bytes)'),
    )
    const type = await exchange(s, '/sum', [item({ i: 1 })], true, 'application/json')
    t.equal(type.status, 415)
    t.same(json(type), {
      statusCode: 415,
      code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
      error: 'UnsupportedMediaTypeException',
      message: 'Unsupported Content-Type: a stream of requests is sent as application/trivium-stream+json',
    })
  })

  t.test(`${lane}: items that are not UTF-8, not JSON, or not the model`, async (t) => {
    const { origin } = await server(t, lane)
    const s = session(t, origin)
    const utf8 = await exchange(s, '/sum', [encodeEnvelope(0, Buffer.from([0x7b, 0xff, 0x7d]))])
    t.same(json(utf8), validation('Payload is not valid UTF-8'))
    const notJson = await exchange(s, '/sum', [encodeEnvelope(0, Buffer.from('{"i":'))])
    t.same(json(notJson), validation('Request body is not valid JSON'))
    const model = await exchange(s, '/double', [item({ i: 1 }), item({ i: 'x' })])
    t.equal(model.status, 200, 'the bidirectional stream had started')
    const end = model.body.subarray(12)
    t.equal(end[0], 2, 'it ends with the end envelope')
    const error = JSON.parse(end.subarray(5).toString()).error
    t.same(
      { ...error, requestId: undefined },
      {
        ...validation('Invalid Tick: i must be integer'),
        details: [{ field: 'i', message: 'must be integer' }],
      },
    )
  })

  t.test(`${lane}: a body never half-closed ends at the deadline`, async (t) => {
    const { origin } = await server(t, lane)
    const s = session(t, origin)
    const answer = await exchange(s, '/deadline', [item({ i: 1 })], false)
    t.equal(answer.status, 504)
    t.same(json(answer), {
      statusCode: 504,
      code: 'TRV_TIMEOUT',
      error: 'TimeoutException',
      message: 'Deadline of 100 ms exceeded',
    })
  })

  t.test(`${lane}: RST_STREAM mid-stream stops the handler and nothing commits`, async (t) => {
    const srv = await server(t, lane)
    const s = session(t, srv.origin)
    const stream = s.request({
      ':method': 'POST',
      ':path': '/slow',
      'content-type': 'application/trivium-stream+json',
    })
    stream.on('error', () => {})
    stream.write(item({ i: 1 }))
    stream.write(item({ i: 2 }))
    await until(() => srv.taken() === 2, 'the handler to take two items')
    // RST_STREAM without END_STREAM (Node's `close(code)` would end the body first: a half-close).
    stream.destroy()
    await until(() => srv.aborted(), "the handler's signal to abort")
    t.same(srv.committed, [], 'nothing committed')
    // The server goes on serving streams on the same session.
    const after = await exchange(s, '/slow', [item({ i: 3 })])
    t.same(JSON.parse(after.body.toString()), { sum: 0, count: 1 })
    t.same(srv.committed, [3])
  })
}

t.test('HTTP/1.1 keeps refusing streams of requests', async (t) => {
  const { origin } = await server(t, 'tls')
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = https.request(`${origin}/sum`, {
      method: 'POST',
      ca: certificate.cert,
      agent: false,
      headers: { 'content-type': 'application/trivium-stream+json' },
    })
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        body += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end(item({ i: 1 }))
  })
  t.equal(answer.status, 400)
  const { requestId: _id, ...body } = JSON.parse(answer.body)
  t.same(body, validation('Endpoint sum takes a stream of requests: call it over WebSocket or TCP'))
})
