// Issue 16 items 6 and 11: HTTP errors produced below the routes use the error body (with `code` and
// `requestId`) and the headers of `fastify.trivium.errorHeaders`.
import net from 'node:net'
import trivium from '@trivium/core'
import Fastify, { type FastifyReply } from 'fastify'
import type { Test } from 'tap'
import t from 'tap'

const SECURITY = { 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY' }

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  Object.assign(fastify.trivium.errorHeaders, SECURITY)
  fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, (req) => req)
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  return (fastify.server.address() as net.AddressInfo).port
}

interface Raw {
  status: number
  headers: Record<string, string>
  body: Record<string, unknown>
}

function raw(port: number, request: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let data = ''
    socket.on('data', (c) => {
      data += c
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim()
      }
      try {
        resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) })
      } catch {
        reject(new Error(`not JSON: ${data}`))
      }
    })
    socket.write(request)
    setTimeout(() => socket.end(), 200)
  })
}

function expectBody(t: Test, res: Raw, status: number, code: string, error: string, message: string) {
  t.equal(res.status, status)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.same(res.body, { statusCode: status, code, error, message, requestId: res.body.requestId })
  t.match(res.body.requestId, /^req-/)
  t.equal(res.headers['x-content-type-options'], 'nosniff')
  t.equal(res.headers['x-frame-options'], 'DENY')
}

t.test('Node client errors: duplicate Content-Length, unknown method, oversized headers', async (t) => {
  const port = await app()
  expectBody(
    t,
    await raw(port, 'POST /tasks/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'),
    400,
    'TRV_VALIDATION',
    'ValidationException',
    'Malformed HTTP request',
  )
  expectBody(
    t,
    await raw(port, 'BREW /tasks/1 HTTP/1.1\r\nHost: x\r\n\r\n'),
    400,
    'TRV_VALIDATION',
    'ValidationException',
    'Unknown HTTP method',
  )
  expectBody(
    t,
    await raw(port, `GET /tasks/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`),
    431,
    'TRV_PAYLOAD_TOO_LARGE',
    'PayloadTooLargeException',
    'Request headers are too large',
  )
})

t.test('router errors: path parameter too long (414), bad URL encoding (400)', async (t) => {
  const port = await app()
  expectBody(
    t,
    await raw(port, `GET /tasks/${'1'.repeat(200)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    414,
    'TRV_VALIDATION',
    'ValidationException',
    'A path parameter is too long',
  )
  expectBody(
    t,
    await raw(port, 'GET /tasks/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    400,
    'TRV_VALIDATION',
    'ValidationException',
    'The URL is not valid (bad percent-encoding)',
  )
})

t.test('methods Fastify knows but nothing routes: QUERY without Content-Type, PROPFIND', async (t) => {
  const port = await app()
  expectBody(
    t,
    await raw(port, 'QUERY /tasks/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    400,
    'TRV_VALIDATION',
    'ValidationException',
    'A Content-Type header is required',
  )
  expectBody(
    t,
    await raw(port, 'PROPFIND /tasks/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    404,
    'TRV_NOT_FOUND',
    'NotFoundException',
    'Route PROPFIND /tasks/1 not found',
  )
})

t.test("an application's own frameworkErrors and clientErrorHandler are kept", async (t) => {
  const fastify = Fastify({
    // Fastify types this reply with the route's generics; a plain reply is what the handler gets
    frameworkErrors: (_err, _req, reply) => (reply as FastifyReply).code(400).send('mine'),
    clientErrorHandler: (_err, socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n{"mine":true}'),
  })
  await fastify.register(trivium)
  fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, (req) => req)
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const port = (fastify.server.address() as net.AddressInfo).port
  t.same((await raw(port, 'BREW / HTTP/1.1\r\nHost: x\r\n\r\n')).body, { mine: true })
  const bad = await fastify.inject(`/tasks/${'1'.repeat(200)}`)
  t.equal(bad.body, 'mine')
})
