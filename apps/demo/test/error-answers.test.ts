// Issue 29 items 3 and 4, over real sockets: every error the demo answers is the documented error body
// with the security headers, including the ones answered below the routes (HTTP/1.1 without Host, an
// unsupported Expect) and by
// the Swagger UI's static files (a path leaving the folder, 416, 412); /docs/static/index.html with a
// query string ends on the docs page instead of redirecting to itself.
import http from 'node:http'
import net from 'node:net'
import { DEFAULT_SECURITY_HEADERS } from '@trivium/protections'
import type { Test } from 'tap'
import t from 'tap'
import { DOCS_CSP } from '../dist/api-docs.js'
import { startDemo } from './helpers.js'

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** One request written as is on a new connection; the answer read until the server closes it. */
function raw(port: number, request: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (c) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () => {
      const data = Buffer.concat(chunks).toString('latin1')
      const end = data.indexOf('\r\n\r\n')
      const [statusLine = '', ...lines] = data.slice(0, end).split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: data.slice(end + 4) })
    })
    socket.write(request)
  })
}

function expectErrorAnswer(
  t: Test,
  res: Answer,
  expected: { status: number; code: string; error: string; message: string; csp?: string },
  head = false,
) {
  t.equal(res.status, expected.status)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  for (const [name, value] of Object.entries(DEFAULT_SECURITY_HEADERS)) {
    const wanted = name === 'Content-Security-Policy' && expected.csp ? expected.csp : value
    t.equal(res.headers[name.toLowerCase()], wanted, name)
  }
  if (head) {
    t.equal(res.body, '')
    return
  }
  const body = JSON.parse(res.body)
  t.same(body, {
    statusCode: expected.status,
    code: expected.code,
    error: expected.error,
    message: expected.message,
    requestId: body.requestId,
  })
  t.match(body.requestId, /^req-/)
}

t.test('every error answer is the error body with the security headers', async (t) => {
  const { app } = await startDemo(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  const close = 'Host: demo.test\r\nConnection: close\r\n'

  await t.test('HTTP/1.1 without Host: 400 naming the header, on any route and method', async (t) => {
    const missingHost = {
      status: 400,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'HTTP/1.1 requests must have a Host header',
    }
    for (const request of [
      'GET /health HTTP/1.1\r\n\r\n',
      'POST /auth/login HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      'GET /docs HTTP/1.1\r\n\r\n',
      'GET /no/such/route HTTP/1.1\r\n\r\n',
      // a WebSocket upgrade, which Node hands to its 'upgrade' listeners instead
      'GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    ]) {
      const res = await raw(port, request)
      expectErrorAnswer(t, res, missingHost)
      t.equal(res.headers.connection, 'close')
    }
    expectErrorAnswer(t, await raw(port, 'HEAD /health HTTP/1.1\r\n\r\n'), missingHost, true)
    // HTTP/1.0 has no Host requirement.
    t.equal((await raw(port, 'GET /health HTTP/1.0\r\n\r\n')).status, 200)
  })

  await t.test('an Expect other than 100-continue: 417', async (t) => {
    expectErrorAnswer(t, await raw(port, `GET /health HTTP/1.1\r\n${close}Expect: 200-ok\r\n\r\n`), {
      status: 417,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'Only "Expect: 100-continue" is supported',
    })
  })

  await t.test('Swagger UI static files: a path leaving the folder is refused, nothing read', async (t) => {
    const forbidden = {
      status: 403,
      code: 'TRV_FORBIDDEN',
      error: 'ForbiddenException',
      message: 'The path leads outside the static files',
      csp: DOCS_CSP,
    }
    for (const path of ['/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/swagger-ui.css%00']) {
      const res = await raw(port, `GET ${path} HTTP/1.1\r\n${close}\r\n`)
      expectErrorAnswer(t, res, forbidden)
      t.notMatch(res.body, /"name"|"version"|dependencies/)
    }
    const head = `HEAD /docs/static/%2e%2e/%2e%2e/package.json HTTP/1.1\r\n${close}\r\n`
    expectErrorAnswer(t, await raw(port, head), forbidden, true)
    expectErrorAnswer(t, await raw(port, `GET /docs/static/nope.js HTTP/1.1\r\n${close}\r\n`), {
      status: 404,
      code: 'TRV_NOT_FOUND',
      error: 'NotFoundException',
      message: 'Route GET /docs/static/nope.js not found',
      csp: DOCS_CSP,
    })
  })

  await t.test('Swagger UI static files: 416 and 412 keep their status and headers', async (t) => {
    const css = `GET /docs/static/swagger-ui.css HTTP/1.1\r\n${close}`
    const range = await raw(port, `${css}Range: bytes=999999999-\r\n\r\n`)
    expectErrorAnswer(t, range, {
      status: 416,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'Range Not Satisfiable',
      csp: DOCS_CSP,
    })
    t.match(range.headers['content-range'], /^bytes \*\/\d+$/)
    expectErrorAnswer(t, await raw(port, `${css}If-Match: "not-this-one"\r\n\r\n`), {
      status: 412,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'Precondition Failed',
      csp: DOCS_CSP,
    })
  })

  // On the same demo (one start fewer for the suite).
  await t.test(
    '/docs/static/index.html ends on the docs page within one redirect, query or not',
    async (t) => {
      for (const [path, docs] of [
        ['/docs/static/index.html?x=1', '/docs/?x=1'],
        ['/docs/static/index.html?url=/other.json&x', '/docs/?url=/other.json&x'],
        ['/docs/static/index.html', '/docs/'],
      ] as const) {
        const seen = await follow(port, path, 5)
        t.same(
          seen.map(({ path, status, location }) => ({ path, status, location })),
          [
            { path, status: 302, location: docs },
            { path: docs, status: 200, location: undefined },
          ],
          path,
        )
        t.equal(seen.at(-1)?.type, 'text/html; charset=utf-8')
      }
    },
  )
})

/** GET following redirects, at most `hops` of them: every answer on the way. */
async function follow(port: number, path: string, hops: number) {
  const seen: { path: string; status: number; location?: string; type?: string }[] = []
  let current = path
  for (let i = 0; i <= hops; i++) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: current }, resolve).on('error', reject)
    })
    res.resume()
    const { location } = res.headers
    seen.push({ path: current, status: res.statusCode ?? 0, location, type: res.headers['content-type'] })
    if (res.statusCode === undefined || res.statusCode < 300 || res.statusCode >= 400 || !location) break
    const next = new URL(location, `http://127.0.0.1:${port}${current}`)
    current = next.pathname + next.search
  }
  return seen
}
