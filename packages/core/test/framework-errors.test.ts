// Issue 16 items 6 and 11: HTTP errors produced below the routes use the error body (with `code` and
// `requestId`) and the headers of `fastify.trivium.errorHeaders`.
import http from 'node:http'
import net from 'node:net'
import { Writable } from 'node:stream'
import trivium, { triviumFactoryOptions } from '@trivium/core'
import { MISSING_FACTORY_OPTIONS, requestListenersKept } from '@trivium/core/internal'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import type { Test } from 'tap'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

// What an application that owns its whole app asks for (the demo does); a guest's defaults are false.
const WHOLE_APP = { errorHandler: true, notFoundHandler: true }

const SECURITY = { 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY' }

// Without Node's own Host check (README "Errors"), so that core answers a missing Host.
async function app(routes: (fastify: FastifyInstance) => void = () => {}) {
  const fastify = Fastify({ ...triviumFactoryOptions(), http: { requireHostHeader: false } })
  await fastify.register(trivium, WHOLE_APP)
  Object.assign(fastify.trivium.errorHeaders, SECURITY)
  fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, (req) => req)
  routes(fastify)
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

/** A logger at warn whose lines are collected. */
function warnings() {
  const lines: { level: number; msg: string }[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  return { lines, logger: { level: 'warn', stream } }
}

t.test("an application's own frameworkErrors and clientErrorHandler are kept, with a warning", async (t) => {
  const log = warnings()
  const fastify = Fastify({
    logger: log.logger,
    // Fastify types this reply with the route's generics; a plain reply is what the handler gets
    frameworkErrors: (_err, _req, reply) => (reply as FastifyReply).code(400).send('mine'),
    clientErrorHandler: (_err, socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n{"mine":true}'),
  })
  await fastify.register(trivium, WHOLE_APP)
  fastify.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id' }, (req) => req)
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const port = (fastify.server.address() as net.AddressInfo).port
  t.same((await raw(port, 'BREW / HTTP/1.1\r\nHost: x\r\n\r\n')).body, { mine: true })
  const bad = await fastify.inject(`/tasks/${'1'.repeat(200)}`)
  t.equal(bad.body, 'mine')
  t.same(
    log.lines.map((l) => [l.level, l.msg]),
    [[40, MISSING_FACTORY_OPTIONS]],
  )
})

t.test(
  'ready() warns once, naming the fix, when Fastify was created without the factory options',
  async (t) => {
    t.match(
      MISSING_FACTORY_OPTIONS,
      /create it with Fastify\(\{ \.\.\.triviumFactoryOptions\(\), \.\.\.yourOptions \}\)/,
    )
    const without = warnings()
    const bare = Fastify({ logger: without.logger })
    await bare.register(trivium, WHOLE_APP)
    await bare.ready()
    await bare.ready()
    t.teardown(() => bare.close())
    t.same(
      without.lines.map((l) => [l.level, l.msg]),
      [[40, MISSING_FACTORY_OPTIONS]],
    )
    // Fastify's own bodies then: no code, no requestId
    t.same((await bare.inject('/%zz')).json(), {
      error: 'Bad Request',
      code: 'FST_ERR_BAD_URL',
      message: "'/%zz' is not a valid url component",
      statusCode: 400,
    })
    const withOptions = warnings()
    const good = Fastify({ ...triviumFactoryOptions(), logger: withOptions.logger })
    await good.register(trivium, WHOLE_APP)
    await good.ready()
    t.teardown(() => good.close())
    t.same(withOptions.lines, [])
    t.equal((await good.inject('/%zz')).json().code, 'TRV_VALIDATION')
    // A guest (the defaults) answers nothing below the routes, so it has nothing to warn about.
    const guest = warnings()
    const plain = Fastify({ logger: guest.logger })
    await plain.register(trivium)
    await plain.ready()
    t.teardown(() => plain.close())
    t.same(guest.lines, [])
  },
)

t.test('HTTP/1.1 without Host: 400 with the error body and the headers, before any route runs', async (t) => {
  let routed = 0
  const port = await app((fastify) => {
    fastify.addHook('onRequest', async () => {
      routed++
    })
  })
  for (const request of [
    'GET /tasks/1 HTTP/1.1\r\n\r\n',
    'POST /tasks/1 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    'GET /nowhere HTTP/1.1\r\nConnection: keep-alive\r\n\r\n',
    'GET /tasks/1 HTTP/2.0\r\n\r\n', // not HTTP/2, a request line that says so over HTTP/1
  ]) {
    const res = await raw(port, request)
    expectBody(
      t,
      res,
      400,
      'TRV_VALIDATION',
      'ValidationException',
      'HTTP/1.1 requests must have a Host header',
    )
    t.equal(res.headers.connection, 'close')
  }
  t.equal(routed, 0)
  // HTTP/1.0 has no Host requirement; an empty Host is a Host.
  t.equal((await raw(port, 'GET /tasks/1 HTTP/1.0\r\n\r\n')).status, 200)
  t.equal((await raw(port, 'GET /tasks/1 HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n')).status, 200)
  t.equal(routed, 2)
})

t.test(
  "errors of routes that are not endpoints: the error body, the status kept, never the error's text",
  async (t) => {
    const port = await app((fastify) => {
      fastify.get('/static/*', async () => {
        // as @fastify/static raises them (http-errors / @fastify/error shapes)
        throw Object.assign(new Error('Forbidden /srv/app/package.json'), {
          statusCode: 403,
          code: 'FST_STATIC_FORBIDDEN_PATH',
        })
      })
      fastify.get('/range', async () => {
        throw Object.assign(new Error('range of /srv/app/file.css'), {
          statusCode: 416,
          headers: { 'content-range': 'bytes */10' },
        })
      })
      fastify.get('/broken', async () => {
        throw new Error('at /srv/app/broken.js:1')
      })
    })
    const get = (path: string) => raw(port, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    const forbidden = await get('/static/x')
    expectBody(
      t,
      forbidden,
      403,
      'TRV_FORBIDDEN',
      'ForbiddenException',
      'The path leads outside the static files',
    )
    const range = await get('/range')
    expectBody(t, range, 416, 'TRV_VALIDATION', 'ValidationException', 'Range Not Satisfiable')
    t.equal(range.headers['content-range'], 'bytes */10')
    const broken = await get('/broken')
    expectBody(t, broken, 500, 'TRV_INTERNAL', 'InternalErrorException', 'Internal server error')
  },
)

t.test("by default (errorHandler: false) Fastify's own is kept; a non-boolean is refused", async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  fastify.get('/range', async () => {
    throw Object.assign(new Error('Range Not Satisfiable'), { statusCode: 416 })
  })
  t.teardown(() => fastify.close())
  t.same((await fastify.inject('/range')).json(), {
    statusCode: 416,
    error: 'Range Not Satisfiable',
    message: 'Range Not Satisfiable',
  })
  await t.rejects(
    async () =>
      Fastify()
        .register(trivium, { errorHandler: 'yes' as never })
        .ready(),
    {
      code: 'TRV_CORE_ERROR_HANDLER',
      message: '@trivium/core: errorHandler must be a boolean',
    },
  )
})

t.test('Expect other than 100-continue: 417 with the error body and the headers', async (t) => {
  const port = await app()
  expectBody(
    t,
    await raw(port, 'GET /tasks/1 HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n'),
    417,
    'TRV_VALIDATION',
    'ValidationException',
    'Only "Expect: 100-continue" is supported',
  )
})

t.test('a request arriving while the server closes: 503 with the error body and the headers', async (t) => {
  let release = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let closingStarted = () => {}
  const closing = new Promise<void>((resolve) => {
    closingStarted = resolve
  })
  const fastify = Fastify({ ...triviumFactoryOptions(), http: { requireHostHeader: false } })
  await fastify.register(trivium, WHOLE_APP)
  Object.assign(fastify.trivium.errorHeaders, SECURITY)
  fastify.get('/slow', async () => {
    await gate
    return { ok: true }
  })
  fastify.addHook('preClose', (done) => {
    closingStarted()
    done()
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  let requests = 0
  fastify.server.on('request', () => requests++)
  const port = (fastify.server.address() as net.AddressInfo).port
  const socket = net.connect(port, '127.0.0.1')
  let data = ''
  socket.on('data', (c) => {
    data += c
  })
  const ended = new Promise((resolve) => socket.on('close', resolve))
  const until = async (what: string, done: () => boolean) => {
    for (
      const deadline = Date.now() + waitBound(10_000);
      !done();
      await new Promise((r) => setTimeout(r, 10))
    )
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
  }
  socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n')
  await until('the first request', () => requests === 1)
  const closed = fastify.close()
  await closing
  socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n') // pipelined on the busy connection
  await until('the second request', () => requests === 2)
  release()
  await ended
  await closed
  const second = data.indexOf('HTTP/1.1 ', 1)
  t.match(data.slice(0, second), /^HTTP\/1.1 200 /)
  const [head = '', body = ''] = data.slice(second).split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  )
  const res: Raw = { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) }
  expectBody(t, res, 503, 'TRV_SERVICE_UNAVAILABLE', 'ServiceUnavailableException', 'Server is shutting down')
})

// Issue 43 item 7: core wraps Fastify's one `request` listener (Node's public listener API). With a second
// listener (a serverFactory that adds its own) it cannot tell which is Fastify's: it leaves both, says so at
// warn, and those early refusals are Node's and Fastify's own again.
t.test('a server with two request listeners: both are kept, a warning names what is lost', async (t) => {
  const log = warnings()
  let seenByOther = 0
  const other = () => {
    seenByOther++
  }
  const fastify = Fastify({
    ...triviumFactoryOptions(),
    logger: log.logger,
    serverFactory: (handler) => {
      const server = http.createServer({ requireHostHeader: false }, handler)
      server.on('request', other)
      return server
    },
  })
  const before = fastify.server.listeners('request')
  t.equal(before.length, 2)
  await fastify.register(trivium, WHOLE_APP)
  fastify.get('/plain', async () => ({ ok: true }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  t.same(
    log.lines.map((l) => [l.level, l.msg]),
    [[40, requestListenersKept(2)]],
  )
  t.same(fastify.server.listeners('request'), before, 'the listeners are the same two, in order')
  const port = (fastify.server.address() as net.AddressInfo).port
  // No Host on HTTP/1.1: Fastify routes it (core's 400 needs the wrapped listener).
  const res = await raw(port, 'GET /plain HTTP/1.1\r\nConnection: close\r\n\r\n')
  t.equal(res.status, 200)
  t.same(res.body, { ok: true })
  t.equal(seenByOther, 1)
})
