// The spec's seven security headers on every HTTP response, custom overrides, and none on a 101 upgrade.
import type { AddressInfo } from 'node:net'
import websocket from '@fastify/websocket'
import trivium from '@trivium/core'
import { DEFAULT_SECURITY_HEADERS, type SecurityHeadersOptions, securityHeaders } from '@trivium/protections'
import Fastify from 'fastify'
import t from 'tap'
import WebSocket from 'ws'

const SPEC_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-xss-protection': '1; mode=block',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': "default-src 'self'",
  'referrer-policy': 'strict-origin-when-cross-origin',
  'permissions-policy': 'geolocation=(), microphone=(), camera=()',
}

function pick(headers: Record<string, unknown>, names: string[]) {
  return Object.fromEntries(names.map((n) => [n, headers[n]]))
}

async function build(options: SecurityHeadersOptions = { routes: 'all' }) {
  const app = Fastify()
  await app.register(trivium)
  await app.register(securityHeaders, options)
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  app.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
    throw new Error('boom')
  })
  app.get('/plain', async () => 'text')
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('exactly the seven spec defaults', async (t) => {
  t.same(
    Object.fromEntries(Object.entries(DEFAULT_SECURITY_HEADERS).map(([k, v]) => [k.toLowerCase(), v])),
    SPEC_HEADERS,
  )
})

t.test(
  "default routes: 'trivium' — endpoints only (and opted-in routes); the host's routes and 404s as they were",
  async (t) => {
    const app = Fastify()
    // A guest: core answers no error of the host's (its 404 stays Fastify's).
    await app.register(trivium, { notFoundHandler: false, errorHandler: false })
    await app.register(securityHeaders)
    app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
    app.get('/plain', async () => 'text')
    app.get('/framed', async (_request, reply) => reply.header('x-frame-options', 'SAMEORIGIN').send('own'))
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    const names = Object.keys(SPEC_HEADERS)
    const headersOf = async (url: string) => {
      const r = await fetch(base + url)
      await r.arrayBuffer()
      return Object.fromEntries(names.map((n) => [n, r.headers.get(n)]))
    }
    const none = Object.fromEntries(names.map((n) => [n, null]))
    t.same(await headersOf('/ping'), SPEC_HEADERS, 'an endpoint carries the seven')
    t.same(await headersOf('/plain'), none, "the host's route: none added")
    t.same(await headersOf('/nope'), none, "the host's 404: none added")
    t.same(
      await headersOf('/framed'),
      { ...none, 'x-frame-options': 'SAMEORIGIN' },
      "the host's own value alone",
    )
  },
)

t.test(
  "routes: 'all' (an app that owns its routes): on 200, 404, 500, 400 and plain Fastify routes",
  async (t) => {
    const app = await build()
    const names = Object.keys(SPEC_HEADERS)
    for (const [url, status] of [
      ['/ping', 200],
      ['/nope', 404],
      ['/boom', 500],
      ['/plain', 200],
    ] as const) {
      const r = await app.inject(url)
      t.equal(r.statusCode, status, url)
      t.same(pick(r.headers, names), SPEC_HEADERS, `${url} carries the seven headers`)
    }
    const bad = await app.inject({
      method: 'POST',
      url: '/ping',
      payload: '{',
      headers: { 'content-type': 'application/json' },
    })
    t.same(pick(bad.headers, names), SPEC_HEADERS, 'a 404 for an unmatched method too')
    // Nothing beyond them from this plugin (helmet would add six more).
    for (const extra of [
      'cross-origin-opener-policy',
      'cross-origin-resource-policy',
      'origin-agent-cluster',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
    ]) {
      t.equal((await app.inject('/ping')).headers[extra], undefined, `no ${extra}`)
    }
  },
)

t.test('custom headers are added and override same-name defaults case-insensitively', async (t) => {
  const app = await build({
    headers: {
      'x-frame-options': 'SAMEORIGIN',
      'Content-Security-Policy': "default-src 'none'",
      'X-Custom': 'yes',
    },
  })
  const r = await app.inject('/ping')
  t.equal(r.headers['x-frame-options'], 'SAMEORIGIN')
  t.equal(r.headers['content-security-policy'], "default-src 'none'")
  t.equal(r.headers['x-custom'], 'yes')
  t.equal(r.headers['x-xss-protection'], '1; mode=block')
  // One header per name on the wire, not the default plus the override.
  const wire = r.raw.res
    .getHeaderNames()
    .filter((n) => n === 'x-frame-options' || n === 'content-security-policy')
  t.same(wire.sort(), ['content-security-policy', 'x-frame-options'])
})

t.test('an answer from an onRequest hook registered before the plugin carries them too', async (t) => {
  // The headers are set when the request reaches the plugin's onRequest hook; a response sent before
  // that (here: an app hook that answers 503 first) gets them in onSend.
  const app = Fastify()
  app.addHook('onRequest', async (request, reply) => {
    if (request.url === '/early') return reply.code(503).send({ busy: true })
  })
  await app.register(trivium)
  await app.register(securityHeaders, { routes: 'all' })
  app.get('/early', async () => 'never')
  app.get('/late', async () => 'text')
  await app.ready()
  t.teardown(() => app.close())
  const names = Object.keys(SPEC_HEADERS)
  const early = await app.inject('/early')
  t.equal(early.statusCode, 503)
  t.same(pick(early.headers, names), SPEC_HEADERS, 'the early 503 carries the seven headers')
  const late = await app.inject('/late')
  t.same(pick(late.headers, names), SPEC_HEADERS)
  const wire = late.raw.res.getHeaderNames().filter((n) => names.includes(n))
  t.equal(wire.length, 7, 'each once')
})

t.test(
  'an early answer over a real socket carries them, whatever hooks Fastify lists (public API only)',
  async (t) => {
    // No reading of Fastify's hooks: the onSend hook is always there, and marks nothing on the wire.
    const app = Fastify()
    app.addHook('onRequest', function appHook(request, reply, done) {
      if (request.url === '/early') reply.code(429).send({ slow: 'down' })
      else done()
    })
    await app.register(securityHeaders, { routes: 'all' })
    app.get('/a', async () => 'text')
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    const names = Object.keys(SPEC_HEADERS)
    const early = await fetch(`${base}/early`)
    t.equal(early.status, 429)
    t.same(
      Object.fromEntries(names.map((n) => [n, early.headers.get(n)])),
      SPEC_HEADERS,
      'the early 429 carries the seven',
    )
    const late = await fetch(`${base}/a`)
    t.same(Object.fromEntries(names.map((n) => [n, late.headers.get(n)])), SPEC_HEADERS)
    const printed = app.printRoutes({ includeHooks: true, commonPrefix: false })
    t.match(printed, '• (onSend) ["securityHeadersFallback()"]')
  },
)

t.test("a route's own value for one of the headers is kept (as with helmet)", async (t) => {
  const app = Fastify()
  await app.register(trivium)
  await app.register(securityHeaders, { routes: 'all' })
  app.get('/framed', async (_request, reply) => {
    reply.header('X-Frame-Options', 'SAMEORIGIN')
    return 'text'
  })
  await app.ready()
  t.teardown(() => app.close())
  const r = await app.inject('/framed')
  t.equal(r.headers['x-frame-options'], 'SAMEORIGIN')
  t.equal(r.headers['content-security-policy'], "default-src 'self'")
})

t.test('a bad routes value is refused at registration', async (t) => {
  const app = Fastify()
  await t.rejects(
    async () => {
      await app.register(securityHeaders, { routes: 'everything' as never })
    },
    { message: `@trivium/protections: securityHeaders.routes must be 'trivium' or 'all', got "everything"` },
  )
  await app.close()
})

t.test('bad custom headers are refused at registration', async (t) => {
  for (const [headers, message] of [
    [{ 'bad name': 'x' }, '@trivium/protections: invalid header name "bad name"'],
    [
      { 'X-A': 'a\r\nb' },
      '@trivium/protections: header X-A must have a string value without control characters',
    ],
    [{ 'X-A': 5 }, '@trivium/protections: header X-A must have a string value without control characters'],
  ] as const) {
    const app = Fastify()
    await t.rejects(
      async () => {
        await app.register(securityHeaders, { headers: headers as never })
      },
      { message },
    )
    await app.close()
  }
})

t.test('not on a WebSocket 101 upgrade, but on a refused upgrade (an HTTP response)', async (t) => {
  const app = Fastify()
  await app.register(websocket)
  await app.register(securityHeaders, { routes: 'all' })
  app.get('/ws', { websocket: true }, (socket) => {
    socket.send('hi')
  })
  app.get(
    '/ws-refused',
    {
      websocket: true,
      onRequest: async (_req, reply) => {
        await reply.code(401).send({ message: 'no' })
      },
    },
    () => {},
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const { port } = app.server.address() as { port: number }
  const upgradeHeaders = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`)
    ws.on('upgrade', (res) => resolve(res.headers))
    ws.on('message', () => ws.close())
    ws.on('error', reject)
  })
  for (const name of Object.keys(SPEC_HEADERS)) t.equal(upgradeHeaders[name], undefined, `no ${name} on 101`)
  const refused = await new Promise<{ status: number; headers: Record<string, unknown> }>((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws-refused`)
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers })
      res.resume()
      ws.terminate()
    })
    ws.on('error', () => {})
  })
  t.equal(refused.status, 401)
  t.same(pick(refused.headers, Object.keys(SPEC_HEADERS)), SPEC_HEADERS)
})
