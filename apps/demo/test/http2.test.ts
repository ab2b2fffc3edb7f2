// The demo over HTTP/2 (README "HTTP2"; PROTOCOL.md "HTTP/2"): HTTP2=1 with TLS_CERT/TLS_KEY serves h2 and
// HTTP/1.1 on the same TLS port (ALPN chooses), HTTP2=h2c cleartext HTTP/2; the same answers and headers.
import http2 from 'node:http2'
import https from 'node:https'
import t, { type Test } from 'tap'
import { selfSigned } from '../../../scripts/test/self-signed.js'
import { loadConfig } from '../dist/config.js'
import { startOnPostgres } from './scale-helpers.js'

interface Answer {
  version: string
  status: number
  headers: Record<string, unknown>
  body: Record<string, unknown>
}

const certificate = selfSigned()
t.teardown(() => certificate.remove())

function overH2(t: Test, origin: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const session = http2.connect(origin, { ca: certificate.cert })
  t.teardown(() => session.close())
  return new Promise((resolve, reject) => {
    const headers = {
      ':method': method,
      ':path': path,
      ...(body ? { 'content-type': 'application/json' } : {}),
    }
    const stream = session.request(headers)
    let text = ''
    let head: http2.IncomingHttpHeaders = {}
    stream.on('response', (h) => {
      head = h
    })
    stream.setEncoding('utf8')
    stream.on('data', (chunk) => {
      text += chunk
    })
    stream.on('end', () =>
      resolve({ version: '2.0', status: Number(head[':status']), headers: head, body: JSON.parse(text) }),
    )
    stream.on('error', reject)
    stream.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

function overHttp1(origin: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const req = https.request(`${origin}${path}`, {
      method,
      ca: certificate.cert,
      agent: false,
      headers: payload
        ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
        : {},
    })
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        text += chunk
      })
      res.on('end', () =>
        resolve({
          version: res.httpVersion,
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: JSON.parse(text),
        }),
      )
    })
    req.on('error', reject)
    req.end(payload)
  })
}

/** The answer without what differs per request (request id, date, rate-limit counters). */
function comparable(answer: Answer) {
  // The request id and /health's uptime differ between any two requests (the uptime when a second
  // passes between them): what the two protocols must agree on is the rest.
  const { requestId: _id, uptimeSeconds: _uptime, ...body } = answer.body
  return {
    status: answer.status,
    contentType: answer.headers['content-type'],
    nosniff: answer.headers['x-content-type-options'],
    frameOptions: answer.headers['x-frame-options'],
    body,
  }
}

const badLogin = { username: 'nobody-h2', password: 'wrong-password-123' }

t.test('HTTP2=1: h2 and HTTP/1.1 on the same TLS port, the same answers', async (t) => {
  const demo = await startOnPostgres(t, 'h2', {
    HTTP2: '1',
    TLS_CERT: certificate.certFile,
    TLS_KEY: certificate.keyFile,
  })
  const origin = `https://127.0.0.1:${demo.http}`
  const h2 = await overH2(t, origin, 'GET', '/health')
  const h1 = await overHttp1(origin, 'GET', '/health')
  t.equal(h2.version, '2.0')
  t.equal(h1.version, '1.1')
  t.equal(h2.status, 200)
  t.same(comparable(h2), comparable(h1), 'GET /health: the same answer over h2 and HTTP/1.1')
  const loginH2 = await overH2(t, origin, 'POST', '/auth/login', badLogin)
  const loginH1 = await overHttp1(origin, 'POST', '/auth/login', badLogin)
  t.equal(loginH2.status, 401)
  t.equal(loginH2.body.code, 'TRV_UNAUTHORIZED')
  t.same(comparable(loginH2), comparable(loginH1), 'a refused login: the same error body and headers')
  t.equal(loginH2.headers.connection, undefined, 'no connection-specific header over HTTP/2')
})

t.test('HTTP2=h2c: cleartext HTTP/2', async (t) => {
  const demo = await startOnPostgres(t, 'h2c', { HTTP2: 'h2c' })
  const answer = await overH2(t, `http://127.0.0.1:${demo.http}`, 'GET', '/health')
  t.equal(answer.status, 200)
  t.equal(answer.headers['x-content-type-options'], 'nosniff')
})

t.test('HTTP2 settings that cannot work are refused with the fix', async (t) => {
  const files = { TLS_CERT: certificate.certFile, TLS_KEY: certificate.keyFile }
  t.throws(() => loadConfig({ HTTP2: '1' }), {
    message: 'HTTP2=1 needs TLS_CERT and TLS_KEY (PEM files): browsers speak HTTP/2 only over TLS',
  })
  t.throws(() => loadConfig(files), {
    message:
      'TLS_CERT and TLS_KEY serve HTTP/2 over TLS: set HTTP2=1 as well (HTTP/1.1 clients keep working on the same port)',
  })
  t.throws(() => loadConfig({ HTTP2: 'h2c', ...files }), {
    message: 'HTTP2=h2c is cleartext: unset TLS_CERT and TLS_KEY, or use HTTP2=1 for h2 over TLS',
  })
  t.throws(() => loadConfig({ HTTP2: 'yes' }), {
    message: 'HTTP2 must be 1 (h2 over TLS, with TLS_CERT and TLS_KEY), h2c or off, got yes',
  })
  t.same(loadConfig({ HTTP2: 'h2c' }).http2, 'h2c')
  t.equal(loadConfig({}).http2, undefined)
})
