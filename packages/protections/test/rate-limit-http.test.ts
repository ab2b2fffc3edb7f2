// Rate limiting through the core pipeline over HTTP (inject), plus WebSocket/TCP calls via trivium.invoke.

import trivium, { MiddlewareOrderError, type Protocol } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import {
  MemoryStore,
  type RateLimitPluginOptions,
  type RateLimitResult,
  type RateLimitStore,
  rateLimit,
} from '@trivium/protections'
import Fastify, { type FastifyServerOptions } from 'fastify'
import t from 'tap'

async function build(options: RateLimitPluginOptions = {}, fastifyOptions: FastifyServerOptions = {}) {
  const app = Fastify(fastifyOptions)
  await app.register(trivium)
  if (options.afterAuth !== false) {
    // Stands in for @trivium/auth: `x-user` header → call.identity.
    app.trivium.use(
      (call, next) => {
        const user = call.headers['x-user'] ?? call.metadata.user
        if (typeof user === 'string') call.identity = { userId: Number(user), roles: [], permissions: [] }
        return next()
      },
      { name: 'auth' },
    )
  }
  await app.register(rateLimit, options)
  app.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ ok: true }))
  app.trivium.endpoint(
    'tight',
    { method: 'GET', url: '/tight', rateLimit: { requests: 2, windowMs: 60_000 } },
    () => ({
      ok: true,
    }),
  )
  app.trivium.endpoint('free', { method: 'GET', url: '/free', rateLimit: false }, () => ({ ok: true }))
  app.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
    throw new Error('boom')
  })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

t.test('allowed HTTP responses carry X-RateLimit-Limit/Remaining/Reset (epoch ms)', async (t) => {
  const app = await build({ afterAuth: false })
  const before = Date.now()
  const r1 = await app.inject({ method: 'GET', url: '/ping' })
  const after = Date.now()
  t.equal(r1.statusCode, 200)
  t.equal(r1.headers['x-ratelimit-limit'], '100')
  t.equal(r1.headers['x-ratelimit-remaining'], '99')
  const reset = Number(r1.headers['x-ratelimit-reset'])
  t.ok(reset >= before + 60_000 && reset <= after + 60_000, 'window end in ms since epoch')
  const r2 = await app.inject({ method: 'GET', url: '/ping' })
  t.equal(r2.headers['x-ratelimit-remaining'], '98')
  t.equal(r2.headers['x-ratelimit-reset'], String(reset), 'same window, same reset')
  // Raw header names as written on the wire.
  const raw = r2.raw.res.getHeaders()
  t.ok('x-ratelimit-limit' in raw)
})

t.test(
  "denied: 429, spec message, retryAfter in body and Retry-After header, this limiter's X-RateLimit-*",
  async (t) => {
    const app = await build({ afterAuth: false })
    t.equal((await app.inject('/tight')).headers['x-ratelimit-remaining'], '1')
    const last = await app.inject('/tight')
    t.equal(last.headers['x-ratelimit-remaining'], '0')
    const denied = await app.inject('/tight')
    t.equal(denied.statusCode, 429)
    t.equal(denied.headers['retry-after'], '60')
    t.equal(denied.headers['x-ratelimit-limit'], '2')
    t.equal(denied.headers['x-ratelimit-remaining'], '0')
    t.equal(denied.headers['x-ratelimit-reset'], last.headers['x-ratelimit-reset'], 'the same window end')
    const body = denied.json()
    t.equal(body.statusCode, 429)
    t.equal(body.code, 'TRV_RATE_LIMITED')
    t.equal(body.error, 'RateLimitExceededException')
    t.equal(body.message, 'Rate limit exceeded. Try again in 60 seconds')
    t.equal(body.retryAfter, 60)
    // Other endpoints have their own counters.
    t.equal((await app.inject('/ping')).statusCode, 200)
  },
)

t.test(
  'limits map wins over the endpoint declaration; false disables; default applies elsewhere',
  async (t) => {
    const app = await build({
      afterAuth: false,
      defaultLimit: { requests: 1, windowMs: 60_000 },
      limits: { tight: { requests: 3, windowMs: 1000 }, ping: false },
    })
    for (let i = 0; i < 3; i++) t.equal((await app.inject('/tight')).statusCode, 200)
    const denied = await app.inject('/tight')
    t.equal(denied.statusCode, 429)
    t.equal(denied.json().message, 'Rate limit exceeded. Try again in 1 seconds')
    for (let i = 0; i < 5; i++) {
      const r = await app.inject('/ping')
      t.equal(r.statusCode, 200)
      t.equal(r.headers['x-ratelimit-limit'], undefined, 'unlimited endpoint: no headers')
    }
    t.equal((await app.inject('/free')).statusCode, 200)
    t.equal((await app.inject('/free')).statusCode, 200)
    t.equal((await app.inject('/boom')).statusCode, 500)
    t.equal((await app.inject('/boom')).statusCode, 429, 'default limit of 1')
  },
)

t.test('a handler error after an allowed check still carries the rate-limit headers', async (t) => {
  const app = await build({ afterAuth: false })
  const r = await app.inject('/boom')
  t.equal(r.statusCode, 500)
  t.equal(r.headers['x-ratelimit-limit'], '100')
  t.equal(r.headers['x-ratelimit-remaining'], '99')
})

t.test('the window resets: a new window after windowMs', async (t) => {
  // The store's clock is the test's: no real window to miss or to wait out, however loaded the machine.
  let now = 1_000_000
  const app = await build({
    afterAuth: false,
    limits: { ping: { requests: 1, windowMs: 1000 } },
    store: new MemoryStore({ sweepIntervalMs: 0, clock: () => now }),
  })
  t.equal((await app.inject('/ping')).statusCode, 200)
  t.equal((await app.inject('/ping')).statusCode, 429)
  now += 999
  t.equal((await app.inject('/ping')).statusCode, 429, 'still the same window')
  now += 1
  const r = await app.inject('/ping')
  t.equal(r.statusCode, 200)
  t.equal(r.headers['x-ratelimit-remaining'], '0')
})

t.test('client id: user:<user_id> after auth, else ip:<socket address>', async (t) => {
  const app = await build({ limits: { ping: { requests: 1, windowMs: 60_000 } } })
  t.equal((await app.inject({ url: '/ping', remoteAddress: '10.0.0.1' })).statusCode, 200)
  t.equal((await app.inject({ url: '/ping', remoteAddress: '10.0.0.1' })).statusCode, 429)
  t.equal((await app.inject({ url: '/ping', remoteAddress: '10.0.0.2' })).statusCode, 200, 'another IP')
  // The same user from two addresses shares one counter; it is not the IP's counter.
  t.equal(
    (await app.inject({ url: '/ping', remoteAddress: '10.0.0.1', headers: { 'x-user': '7' } })).statusCode,
    200,
  )
  t.equal(
    (await app.inject({ url: '/ping', remoteAddress: '10.0.0.9', headers: { 'x-user': '7' } })).statusCode,
    429,
  )
  t.equal(
    (await app.inject({ url: '/ping', remoteAddress: '10.0.0.9', headers: { 'x-user': '8' } })).statusCode,
    200,
  )
  // The key shapes, through the public API.
  const result = await app.triviumRateLimit.check('user:7:ping', { requests: 1, windowMs: 60_000 })
  t.equal(result.isAllowed, false, 'user:<id>:<endpoint> is the key the middleware used')
  const ipResult = await app.triviumRateLimit.check('ip:10.0.0.2:ping', { requests: 1, windowMs: 60_000 })
  t.equal(ipResult.isAllowed, false, 'ip:<address>:<endpoint> is the key the middleware used')
})

t.test('X-Forwarded-For does not dodge the limit (no trustProxy)', async (t) => {
  const app = await build({ afterAuth: false, limits: { ping: { requests: 1, windowMs: 60_000 } } })
  t.equal((await app.inject({ url: '/ping', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode, 200)
  const r = await app.inject({ url: '/ping', headers: { 'x-forwarded-for': '2.2.2.2' } })
  t.equal(r.statusCode, 429, 'both counted as the socket address 127.0.0.1')
  const own = await app.triviumRateLimit.check('ip:127.0.0.1:ping', { requests: 1, windowMs: 60_000 })
  t.equal(own.isAllowed, false)
})

t.test('with trustProxy configured, the forwarded client address is the client id', async (t) => {
  const app = await build(
    { afterAuth: false, limits: { ping: { requests: 1, windowMs: 60_000 } } },
    { trustProxy: '127.0.0.1' },
  )
  t.equal((await app.inject({ url: '/ping', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/ping', headers: { 'x-forwarded-for': '2.2.2.2' } })).statusCode, 200)
  t.equal((await app.inject({ url: '/ping', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode, 429)
  // A proxy that is not trusted cannot pick the address.
  t.equal(
    (await app.inject({ url: '/ping', remoteAddress: '10.9.9.9', headers: { 'x-forwarded-for': '3.3.3.3' } }))
      .statusCode,
    200,
  )
  t.equal(
    (await app.inject({ url: '/ping', remoteAddress: '10.9.9.9', headers: { 'x-forwarded-for': '4.4.4.4' } }))
      .statusCode,
    429,
  )
})

async function invoke(
  app: Awaited<ReturnType<typeof build>>,
  protocol: Protocol,
  extra: Record<string, unknown> = {},
) {
  return app.trivium.invoke({
    endpoint: 'tight',
    protocol,
    payload: new Uint8Array(0),
    format: jsonFormat,
    requestId: `r${Math.random()}`,
    log: app.log,
    ...extra,
  })
}

t.test('WebSocket and TCP calls are limited on the same key as HTTP, without headers', async (t) => {
  const app = await build({ afterAuth: false })
  const ws = await invoke(app, 'websocket', { clientIp: '127.0.0.1' })
  t.same(ws.result, { ok: true })
  t.equal(ws.call.responseHeaders, undefined, 'no X-RateLimit-* on WebSocket')
  const tcp = await invoke(app, 'tcp', { clientIp: '127.0.0.1' })
  t.equal(tcp.call.responseHeaders, undefined, 'no X-RateLimit-* on TCP')
  const http = await app.inject('/tight')
  t.equal(http.statusCode, 429, 'the HTTP request is the third on ip:127.0.0.1:tight')
  await t.rejects(invoke(app, 'tcp', { clientIp: '127.0.0.1' }), {
    name: 'RateLimitExceededException',
    code: 'TRV_RATE_LIMITED',
    statusCode: 429,
    retryAfter: 60,
    message: 'Rate limit exceeded. Try again in 60 seconds',
  })
})

t.test('no client address → ip:unknown; user_id from a frame transport → user:<id>', async (t) => {
  const app = await build()
  await invoke(app, 'tcp')
  await invoke(app, 'websocket')
  await t.rejects(invoke(app, 'tcp'), { code: 'TRV_RATE_LIMITED' })
  t.equal(
    (await app.triviumRateLimit.check('ip:unknown:tight', { requests: 2, windowMs: 60_000 })).isAllowed,
    false,
  )
  await invoke(app, 'tcp', { metadata: { user: '42' } })
  await invoke(app, 'websocket', { metadata: { user: '42' }, clientIp: '9.9.9.9' })
  await t.rejects(invoke(app, 'tcp', { metadata: { user: '42' } }), { code: 'TRV_RATE_LIMITED' })
})

t.test('middleware order: after auth by default; fails at ready() without auth', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  await app.register(rateLimit)
  await t.rejects(async () => app.ready(), MiddlewareOrderError)
  await app.close()
  const app2 = Fastify()
  await app2.register(trivium)
  await app2.register(rateLimit)
  app2.trivium.use((_c, next) => next(), { name: 'auth' })
  await t.rejects(async () => app2.ready(), {
    message: '@trivium/core: "rate-limit" must be registered after "auth"',
  })
  await app2.close()
  const app3 = await build()
  t.same(app3.trivium.pipeline.names(), ['auth', 'rate-limit'])
})

t.test('options are validated at registration', async (t) => {
  const cases: [RateLimitPluginOptions, string][] = [
    [
      { defaultLimit: { requests: 0, windowMs: 1 } },
      '@trivium/protections: defaultLimit.requests must be a positive integer',
    ],
    [
      { defaultLimit: { requests: 1, windowMs: 1.5 } },
      '@trivium/protections: defaultLimit.windowMs must be a positive integer (milliseconds)',
    ],
    [
      { limits: { a: { requests: 1 } as never } },
      '@trivium/protections: limits["a"].windowMs must be a positive integer (milliseconds)',
    ],
    [{ afterAuth: 'yes' as never }, '@trivium/protections: afterAuth must be a boolean'],
    [
      { whenStoreDown: 'maybe' as never },
      '@trivium/protections: whenStoreDown must be "memory", "open" or "closed"',
    ],
    [
      { redis: {} as never },
      '@trivium/protections: redis must be an ioredis client (needs eval and evalsha)',
    ],
  ]
  for (const [options, message] of cases) {
    const app = Fastify()
    await app.register(trivium)
    await t.rejects(
      async () => {
        await app.register(rateLimit, { afterAuth: false, ...options })
      },
      { message },
    )
    await app.close()
  }
  const app = Fastify()
  await app.register(trivium)
  await app.register(rateLimit, { afterAuth: false })
  app.trivium.endpoint(
    'bad',
    { method: 'GET', url: '/bad', rateLimit: { requests: -1, windowMs: 5 } },
    () => 1,
  )
  await t.rejects(async () => app.ready(), {
    message: '@trivium/protections: endpoint "bad" rateLimit.requests must be a positive integer',
  })
  await app.close()
})

t.test('middleware: an async store, a throwing store and a new window give the same answers', async (t) => {
  // Asynchronous store: headers come from its verdict (limit text from the result, not the config).
  let verdict: RateLimitResult = { isAllowed: true, remaining: 4, resetTime: 1_000, retryAfter: 0, limit: 7 }
  const asyncStore: RateLimitStore = { hit: async () => verdict }
  const app = await build({ afterAuth: false, store: asyncStore })
  const ok = await app.inject('/ping')
  t.equal(ok.statusCode, 200)
  t.equal(ok.headers['x-ratelimit-limit'], '7')
  t.equal(ok.headers['x-ratelimit-remaining'], '4')
  t.equal(ok.headers['x-ratelimit-reset'], '1000')
  verdict = { isAllowed: true, remaining: 3, resetTime: 2_000, retryAfter: 0, limit: 100 }
  const next = await app.inject('/ping')
  t.equal(next.headers['x-ratelimit-limit'], '100')
  t.equal(next.headers['x-ratelimit-reset'], '2000', 'a new reset time is not served from the last one')
  verdict = { isAllowed: false, remaining: 0, resetTime: 2_000, retryAfter: 9, limit: 100 }
  const denied = await app.inject('/ping')
  t.equal(denied.statusCode, 429)
  t.equal(denied.headers['retry-after'], '9')
  t.equal(denied.headers['x-ratelimit-remaining'], '0')
  t.equal(denied.headers['x-ratelimit-limit'], '100')

  // Synchronous store that throws, with whenStoreDown `closed`: 503, as before.
  const throwing: RateLimitStore = {
    hit: () => {
      throw new Error('ECONNREFUSED')
    },
  }
  const closed = await build({ afterAuth: false, store: throwing, whenStoreDown: 'closed' })
  const refused = await closed.inject('/ping')
  t.equal(refused.statusCode, 503)
  t.equal(refused.json().message, 'Rate limit store unavailable')

  // Memory store with a clock: the reset header follows the window.
  let now = 1_000_000
  const clocked = await build({
    afterAuth: false,
    store: new MemoryStore({ sweepIntervalMs: 0, clock: () => now }),
  })
  t.equal((await clocked.inject('/tight')).headers['x-ratelimit-reset'], String(1_000_000 + 60_000))
  now += 60_000
  const fresh = await clocked.inject('/tight')
  t.equal(fresh.headers['x-ratelimit-reset'], String(1_060_000 + 60_000))
  t.equal(fresh.headers['x-ratelimit-remaining'], '1', 'new window')
  t.equal(fresh.headers['x-ratelimit-limit'], '2')
})

t.test('a typo in limits fails ready(), naming the closest endpoint', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(trivium)
  await app.register(rateLimit, {
    afterAuth: false,
    limits: { 'auth.logn': { requests: 5, windowMs: 60_000 } },
  })
  app.trivium.endpoint('auth.login', { method: 'POST', url: '/login' }, () => ({}))
  app.trivium.endpoint('auth.logout', { method: 'POST', url: '/logout' }, () => ({}))
  await t.rejects(async () => app.ready(), {
    message:
      '@trivium/protections: rate-limit limits names unknown endpoint "auth.logn" (did you mean "auth.login"?)',
  })
})
