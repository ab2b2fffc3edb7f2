// Trivium's protections over HTTP/2 (PROTOCOL.md "HTTP/2": "What is the same"), through node:http2 on a real
// socket, against the conformance server served as h2c with compression on: the same answers and headers as
// HTTP/1.1 gives — security headers, CORS preflight, the body limit's 413, response compression, and no
// connection-specific header on any of them (HTTP/2 forbids them; Node resets a stream that sends one).
import http from 'node:http'
import http2 from 'node:http2'
import { gunzipSync } from 'node:zlib'
import { COMPRESSIBLE_TEXT, startConformanceServer } from '@trivium/conformance'
import t, { type Test } from 'tap'

const server = await startConformanceServer({ tcpMode: 'direct', http2: 'h2c', compression: true })
t.teardown(() => server.close())
const tokens = await server.tokensFor(7)

interface Answer {
  headers: http2.IncomingHttpHeaders
  body: Buffer
}

function call(t: Test, headers: http2.OutgoingHttpHeaders, body?: string | Buffer): Promise<Answer> {
  const session = http2.connect(server.httpUrl)
  t.teardown(() => session.close())
  return new Promise((resolve, reject) => {
    const stream = session.request(headers)
    const chunks: Buffer[] = []
    let head: http2.IncomingHttpHeaders = {}
    stream.on('response', (h) => {
      head = h
    })
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    stream.on('end', () => resolve({ headers: head, body: Buffer.concat(chunks) }))
    stream.on('error', reject)
    stream.end(body)
  })
}

function postEcho(t: Test, headers: http2.OutgoingHttpHeaders, body: string | Buffer): Promise<Answer> {
  return call(
    t,
    { ':method': 'POST', ':path': '/echo', 'content-type': 'application/json', ...headers },
    body,
  )
}

const CONNECTION_HEADERS = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']
function noConnectionHeaders(t: Test, answer: Answer): void {
  t.same(
    CONNECTION_HEADERS.filter((name) => answer.headers[name] !== undefined),
    [],
    'no connection-specific header',
  )
}

t.test('a compressed answer: gzip as the client accepts, security headers on it', async (t) => {
  const answer = await postEcho(
    t,
    { 'accept-encoding': 'gzip', authorization: `Bearer ${tokens.member}` },
    JSON.stringify({ text: COMPRESSIBLE_TEXT, count: 1 }),
  )
  t.equal(answer.headers[':status'], 201)
  t.equal(answer.headers['content-encoding'], 'gzip')
  t.equal(answer.headers['x-content-type-options'], 'nosniff')
  t.equal(JSON.parse(gunzipSync(answer.body).toString('utf8')).text, COMPRESSIBLE_TEXT)
  noConnectionHeaders(t, answer)
})

t.test('a body over the limit: 413 in the error body', async (t) => {
  const answer = await postEcho(t, { 'accept-encoding': 'identity' }, Buffer.alloc(1024 * 1024 + 1, 0x20))
  t.equal(answer.headers[':status'], 413)
  const body = JSON.parse(answer.body.toString('utf8'))
  t.same(
    { statusCode: body.statusCode, code: body.code, error: body.error },
    { statusCode: 413, code: 'TRV_PAYLOAD_TOO_LARGE', error: 'PayloadTooLargeException' },
  )
  t.equal(answer.headers['x-frame-options'], 'DENY')
  noConnectionHeaders(t, answer)
})

t.test('a CORS preflight is answered as over HTTP/1.1', async (t) => {
  const http1 = await startConformanceServer({ tcpMode: 'direct', compression: true })
  t.teardown(() => http1.close())
  const preflight = {
    origin: 'https://app.example.com',
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type',
  }
  const h2 = await call(t, { ':method': 'OPTIONS', ':path': '/echo', ...preflight })
  const h1 = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(`${http1.httpUrl}/echo`, { method: 'OPTIONS', headers: preflight }, resolve)
    req.on('error', reject)
    req.end()
  })
  h1.resume()
  const cors = (headers: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(headers)
        .filter(([name]) => name.startsWith('access-control-') || name === 'vary')
        .sort(([a], [b]) => a.localeCompare(b)),
    )
  t.equal(h2.headers[':status'], h1.statusCode)
  t.equal(h2.headers['access-control-allow-origin'], 'https://app.example.com')
  t.same(cors(h2.headers), cors(h1.headers), 'the same CORS headers')
  noConnectionHeaders(t, h2)
})

t.test('a rate-limited endpoint counts HTTP/2 streams as requests', async (t) => {
  const answers: Answer[] = []
  const headers = { ':method': 'GET', ':path': '/limited', authorization: `Bearer ${tokens.member}` }
  for (let i = 0; i < 20; i++) {
    const answer = await call(t, headers)
    answers.push(answer)
    if (Number(answer.headers[':status']) === 429) break
  }
  const last = answers.at(-1) as Answer
  t.equal(last.headers[':status'], 429, `refused after ${answers.length - 1} calls`)
  t.equal(JSON.parse(last.body.toString('utf8')).code, 'TRV_RATE_LIMITED')
  t.ok(Number(last.headers['retry-after']) > 0, 'Retry-After')
  noConnectionHeaders(t, last)
})
