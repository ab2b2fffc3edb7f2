// Hostile HTTP/2 peers on a real socket (PROTOCOL.md "HTTP/2"), frames written by hand (raw-h2.ts) where
// node:http2's client refuses to misbehave. Each case asserts the exact outcome — the GOAWAY or RST_STREAM
// code, how far the server went — and that the server still answers a fresh connection afterwards.

import http2 from 'node:http2'
import { type ConformanceServer, startConformanceServer } from '@trivium/conformance'
import { HTTP2_LIMITS, HTTP2_SETTINGS } from '@trivium/core/internal'
import t, { type Test } from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { FLAG, FRAME, H2_ERROR, headersFrame, RawH2, request, rstStream, settings } from './raw-h2.ts'

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + waitBound(ms)
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
}

let routed = 0
async function start(): Promise<{ server: ConformanceServer; port: number }> {
  const server = await startConformanceServer({
    tcpMode: 'direct',
    http2: 'h2c',
    register: (app) => {
      app.addHook('onRequest', (_request, _reply, done) => {
        routed++
        done()
      })
    },
  })
  return { server, port: Number(new URL(server.httpUrl).port) }
}

const { server, port } = await start()
t.teardown(() => server.close())

/** A fresh connection's `GET /ping`: the server still serves after the attack. */
async function pingAnswer(t: Test, on = port): Promise<string> {
  const raw = await RawH2.open(on)
  t.teardown(() => raw.destroy())
  await raw.write(headersFrame(1, request('GET', '/ping'), true))
  await until(() =>
    raw.frames.some((f) => f.streamId === 1 && f.type === FRAME.DATA && f.flags & FLAG.END_STREAM),
  )
  return raw.data(1)
}

async function pingAnswers(t: Test): Promise<void> {
  t.equal(await pingAnswer(t), '{"ok":true}', 'a fresh connection is answered')
}

t.test('rapid reset (CVE-2023-44487): HEADERS then RST_STREAM in a loop', async (t) => {
  const own = await start() // its streams use up the rate limit of 127.0.0.1 on this server
  t.teardown(() => own.server.close())
  const raw = await RawH2.open(own.port)
  t.teardown(() => raw.destroy())
  const pairs = 20_000
  const before = routed
  const flood: Buffer[] = []
  for (let i = 0; i < pairs; i++) {
    const id = 2 * i + 1
    flood.push(headersFrame(id, request('GET', '/ping'), false), rstStream(id, H2_ERROR.CANCEL))
  }
  await raw.write(Buffer.concat(flood))
  await until(() => raw.goaway() !== undefined)
  // nghttp2's reset limit (a burst of 1000 resets, then 33 a second) ends the session: INTERNAL_ERROR.
  const goaway = raw.goaway()
  t.equal(goaway?.code, H2_ERROR.INTERNAL_ERROR, 'GOAWAY INTERNAL_ERROR')
  t.ok(goaway && goaway.lastStreamId < (2 * pairs) / 4, `the session ended at stream ${goaway?.lastStreamId}`)
  t.equal(raw.count(FRAME.HEADERS), 0, 'no stream was answered (each was reset first)')
  const handled = routed - before
  // Bounded work, not time: only the streams before the limit reached Fastify, a fraction of the flood.
  t.ok(handled < pairs / 4, `${handled} of ${pairs} streams reached the router`)
  // The server is up, and the reset streams counted against the address's rate limit as requests.
  const answer = JSON.parse(await pingAnswer(t, own.port))
  t.same(
    { statusCode: answer.statusCode, code: answer.code, error: answer.error },
    { statusCode: 429, code: 'TRV_RATE_LIMITED', error: 'RateLimitExceededException' },
  )
})

t.test('SETTINGS with more entries than maxSettings: GOAWAY ENHANCE_YOUR_CALM', async (t) => {
  const raw = await RawH2.open(port)
  t.teardown(() => raw.destroy())
  const entries = Array.from({ length: HTTP2_LIMITS.maxSettings + 1 }, (_, i): [number, number] => [
    4,
    65_535 + i,
  ])
  await raw.write(settings(entries))
  await until(() => raw.goaway() !== undefined)
  t.same(raw.goaway(), { lastStreamId: 0, code: H2_ERROR.ENHANCE_YOUR_CALM })
  await pingAnswers(t)
})

t.test('a SETTINGS flood: the session ends, the server serves on', async (t) => {
  const raw = await RawH2.open(port)
  t.teardown(() => raw.destroy())
  await raw.write(Buffer.concat(Array.from({ length: 100_000 }, () => settings([[4, 65_535]]))))
  await until(() => raw.closed)
  // nghttp2 stops queueing SETTINGS ACKs past its flood bound: GOAWAY, then the connection closes.
  t.same(raw.goaway(), { lastStreamId: 0, code: H2_ERROR.INTERNAL_ERROR })
  t.equal(raw.closed, true, 'the connection is closed')
  t.ok(raw.count(FRAME.SETTINGS) < 1000, `${raw.count(FRAME.SETTINGS)} SETTINGS frames answered of 100000`)
  await pingAnswers(t)
})

t.test('header-list bombs: the stream is reset ENHANCE_YOUR_CALM, the session serves on', async (t) => {
  const raw = await RawH2.open(port)
  t.teardown(() => raw.destroy())
  const before = routed
  const big = 'a'.repeat((HTTP2_SETTINGS.maxHeaderListSize as number) + 1)
  await raw.write(headersFrame(1, request('GET', '/ping', [['x-big', big]]), true))
  const pairs = Array.from({ length: HTTP2_LIMITS.maxHeaderListPairs }, (_, i): [string, string] => [
    `x-h${i}`,
    'v',
  ])
  await raw.write(headersFrame(3, request('GET', '/ping', pairs), true))
  await raw.write(headersFrame(5, request('GET', '/ping'), true))
  await until(() =>
    raw.frames.some((f) => f.streamId === 5 && f.type === FRAME.DATA && f.flags & FLAG.END_STREAM),
  )
  t.equal(
    raw.reset(1),
    H2_ERROR.ENHANCE_YOUR_CALM,
    `a header list over ${HTTP2_SETTINGS.maxHeaderListSize} bytes`,
  )
  t.equal(
    raw.reset(3),
    H2_ERROR.ENHANCE_YOUR_CALM,
    `more than ${HTTP2_LIMITS.maxHeaderListPairs} header fields`,
  )
  t.equal(raw.data(5), '{"ok":true}', 'the next stream on the same session is answered')
  t.equal(raw.goaway(), undefined, 'the session stays open')
  t.equal(routed - before, 1, 'only the good request reached the router')
})

t.test(
  'a request body that never ends (no END_STREAM) is answered at its deadline, the stream closed',
  async (t) => {
    const session = http2.connect(server.httpUrl)
    t.teardown(() => session.close())
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': '/echo',
        'content-type': 'application/json',
        'trivium-timeout-ms': '200',
      },
      { endStream: false },
    )
    stream.write('{"text":"never end')
    let status: number | undefined
    let body = ''
    stream.on('response', (headers) => {
      status = Number(headers[':status'])
    })
    stream.setEncoding('utf8')
    stream.on('data', (chunk) => {
      body += chunk
    })
    await until(() => stream.closed, 2000)
    t.equal(status, 504)
    const error = JSON.parse(body)
    t.same(
      { statusCode: error.statusCode, code: error.code, error: error.error, message: error.message },
      {
        statusCode: 504,
        code: 'TRV_TIMEOUT',
        error: 'TimeoutException',
        message: 'Deadline of 200 ms exceeded',
      },
    )
    t.equal(
      stream.rstCode,
      H2_ERROR.NO_ERROR,
      'the stream is closed (RST_STREAM NO_ERROR), its request half too',
    )
    t.equal(session.closed, false, 'the session serves on')
  },
)

t.test('shutdown: an idle h2c session gets GOAWAY NO_ERROR and app.close() completes', async (t) => {
  const other = await start()
  const raw = await RawH2.open(other.port)
  t.teardown(() => raw.destroy())
  await raw.write(headersFrame(1, request('GET', '/ping'), true))
  await until(() => raw.data(1) !== '')
  t.equal(raw.data(1), '{"ok":true}')
  await other.server.close()
  await until(() => raw.goaway() !== undefined)
  t.same(raw.goaway(), { lastStreamId: 1, code: H2_ERROR.NO_ERROR })
})

t.test(
  'shutdown: an event stream over HTTP/2 ends with the 503 error event, the session with GOAWAY',
  async (t) => {
    const other = await start()
    const { member } = await other.server.tokensFor(9)
    const session = http2.connect(other.server.httpUrl)
    t.teardown(() => session.destroy())
    let goaway: number | undefined
    session.on('goaway', (code) => {
      goaway = code
    })
    const stream = session.request({
      ':method': 'POST',
      ':path': '/ticker',
      'content-type': 'application/json',
      authorization: `Bearer ${member}`,
    })
    stream.end(JSON.stringify({ runId: 'h2-shutdown' }))
    let events = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk) => {
      events += chunk
    })
    await until(() => events.includes('event: item'))
    const closed = other.server.close()
    await until(() => stream.closed)
    await closed
    const last = events.trim().split('\n\n').at(-1) ?? ''
    t.match(last, /^event: error\ndata: /, 'the last event is the error event')
    const error = JSON.parse(last.split('data: ')[1] as string)
    t.same(
      { statusCode: error.statusCode, code: error.code, message: error.message },
      { statusCode: 503, code: 'TRV_SERVICE_UNAVAILABLE', message: 'Server is shutting down' },
    )
    t.equal(goaway, H2_ERROR.NO_ERROR, 'the session got GOAWAY NO_ERROR')
    t.equal(other.server.tickerFinished('h2-shutdown'), true, "the handler's finally ran")
  },
)
