// Issue 40 item 1: a guest changes nothing it does not own. One function builds an existing service's
// routes and errors (a schema error, @fastify/jwt's missing header, a 418, a 503, @fastify/auth's
// `reply.code(401)` then an error without a status, @fastify/rate-limit's 429, an app hook's 403, an error
// handler of the app's own set before Trivium, an unknown route); the same service is run without and
// with Trivium (core, auth, protections' rate limit) over real sockets, and every answer — status,
// headers, body — and every log line of those requests must be the same. Trivium's own endpoints and
// the routes that opt in (`config.triviumRoute`) answer in Trivium's error body, a hook's status kept.
import fastifyAuth from '@fastify/auth'
import fastifyJwt from '@fastify/jwt'
import fastifyRateLimit from '@fastify/rate-limit'
import triviumAuth from '@trivium/auth'
import triviumCore from '@trivium/core'
import triviumProtections from '@trivium/protections'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import t from 'tap'
import { until } from './raw-frames.ts'

const SECRET = 'host-diff-secret-host-diff-secret-host-diff'

interface Variant {
  trivium: boolean
  /** The application's own root error handler, set before Trivium is registered. */
  rootHandler: boolean
}

interface Service {
  base: string
  /** Sends one request; its answer and its log lines, without what differs run to run. */
  exchange(path: string, init?: RequestInit, logged?: boolean): Promise<{ answer: Answer; logs: unknown[] }>
  close(): Promise<void>
}

const appError = (status: number, message: string, code?: string) =>
  Object.assign(new Error(message), { statusCode: status }, code ? { code } : {})

/** An app's own error handler: its own body shape, so a replaced one would show. */
function ownHandler(error: Error & { statusCode?: number }, _request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode ?? (reply.statusCode >= 400 ? reply.statusCode : 500)
  reply.code(status).send({ mine: true, message: error.message })
}

/** The service's own plugins, hooks and routes: what must answer the same with Trivium in it. */
async function service(variant: Variant): Promise<Service> {
  const lines: Record<string, unknown>[] = []
  const app = Fastify({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  })
  await app.register(fastifyJwt, { secret: SECRET })
  await app.register(fastifyAuth)
  // Only requests naming a key are counted, each key on its own (one case each).
  await app.register(fastifyRateLimit, {
    max: 1,
    timeWindow: '1 minute',
    allowList: (request) => request.headers['x-limit'] === undefined,
    keyGenerator: (request) => String(request.headers['x-limit']),
  })
  if (variant.rootHandler) app.setErrorHandler(ownHandler)
  // App-wide hooks, which run for Trivium's endpoints too.
  app.addHook('onRequest', async (request) => {
    if (request.headers['x-deny'] !== undefined) throw appError(403, 'Denied by the policy hook')
    if (request.headers['x-pressure'] !== undefined) throw appError(503, 'Service Unavailable')
    if (request.headers['x-jwt'] !== undefined) await request.jwtVerify()
  })
  const refuseAuth = (_request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    reply.code(401)
    done(new Error('no credentials'))
  }
  app.addHook('preHandler', (request, reply, done) => {
    if (request.headers['x-auth'] === undefined) return done()
    app.auth([refuseAuth]).call(app, request, reply, done)
  })
  // An encapsulated context with its own error handler, before Trivium.
  await app.register(async (own) => {
    own.setErrorHandler(ownHandler)
    own.get('/own/fail', async () => {
      throw appError(409, 'Conflict in the own context')
    })
  })

  if (variant.trivium) {
    await app.register(triviumCore)
    await app.register(triviumAuth, { secret: SECRET, issuer: 'host-diff' })
    await app.register(triviumProtections) // the package defaults: CORS and security headers on Trivium's routes only
    app.trivium.endpoint('hello', { method: 'GET', url: '/hello', auth: 'public' }, () => ({ hello: 1 }))
    app.get(
      '/opted',
      {
        config: { triviumRoute: { auth: 'public' } },
        schema: { querystring: { type: 'object', required: ['q'], properties: { q: { type: 'string' } } } },
      },
      async (request) => {
        if ((request.query as { q: string }).q === 'down') throw appError(503, 'down for maintenance')
        return { opted: true }
      },
    )
    app.get('/opted/required', { config: { triviumRoute: { auth: 'required' } } }, async () => ({}))
  }

  // The service's routes, registered after Trivium (as a service adds its routes after its plugins).
  app.post(
    '/items',
    { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
    async (request) => request.body,
  )
  app.get('/jwt', { onRequest: (request) => request.jwtVerify() }, async (request) => request.user)
  app.get('/teapot', async () => {
    throw appError(418, "I'm a teapot")
  })
  app.get('/unavailable', async () => {
    throw appError(503, 'The database is down')
  })
  app.get('/broken', async () => {
    throw new Error('at /srv/app/broken.js:1')
  })
  app.get('/fastify-auth', { preHandler: app.auth([refuseAuth]) }, async () => ({ ok: true }))
  app.get('/ok', async () => ({ ok: true }))
  await app.register(async (own) => {
    own.setErrorHandler(ownHandler)
    own.get('/own-after/fail', async () => {
      throw appError(422, 'Unprocessable in the own context')
    })
  })

  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const base = `http://127.0.0.1:${port}`
  return {
    base,
    async exchange(path, init, logged = true) {
      const from = lines.length
      const answer = await ask(base, path, init)
      const mine = () => lines.slice(from)
      // Fastify logs no line for a request its router refuses (a bad URL): nothing to wait for.
      if (logged) await until(() => mine().some((l) => l.msg === 'request completed'), `the log of ${path}`)
      return { answer, logs: mine().map(stableLine) }
    },
    close: () => app.close(),
  }
}

/** A log line without what differs from run to run (times, ports, stacks' line numbers). */
function stableLine(line: Record<string, unknown>): unknown {
  const { time, pid, hostname, responseTime, reqId, req, err, ...rest } = line
  const { remotePort, host, ...request } = (req ?? {}) as Record<string, unknown>
  const { stack, ...error } = (err ?? {}) as Record<string, unknown>
  return { ...rest, req: request, err: error }
}

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

const VARYING_HEADERS = new Set(['date', 'keep-alive', 'connection', 'x-ratelimit-reset', 'retry-after'])

async function ask(base: string, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, init)
  const headers: Record<string, string> = {}
  res.headers.forEach((value, name) => {
    if (!VARYING_HEADERS.has(name)) headers[name] = value
  })
  // @fastify/rate-limit's 429 message counts down the window ("retry in 59 seconds"), like its Retry-After
  // header: the two services are asked seconds apart, so the count is left out of the comparison too.
  const body = (await res.text()).replace(/retry in \d+ \w+/g, 'retry in <time left>')
  return { status: res.status, headers, body }
}

/** The requests of the diff: every one reaches a route (or none) that is not Trivium's. */
const LEGACY: [string, string, RequestInit?, boolean?][] = [
  ['schema error', '/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }],
  [
    'schema ok',
    '/items',
    { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"a"}' },
  ],
  ["@fastify/jwt's missing header", '/jwt'],
  ['a 418', '/teapot'],
  ['a 503 of the app', '/unavailable'],
  ['an unexpected error', '/broken'],
  ["@fastify/auth's refusal (reply.code(401), an error without a status)", '/fastify-auth'],
  ['an app hook throwing a 403', '/ok', { headers: { 'x-deny': '1' } }],
  ['an app hook throwing a 503 (under-pressure)', '/ok', { headers: { 'x-pressure': '1' } }],
  ['@fastify/jwt in an app hook', '/ok', { headers: { 'x-jwt': '1' } }],
  ['@fastify/auth in an app hook', '/ok', { headers: { 'x-auth': '1' } }],
  ['@fastify/rate-limit: first', '/teapot', { headers: { 'x-limit': 'legacy' } }],
  ['@fastify/rate-limit: 429', '/teapot', { headers: { 'x-limit': 'legacy' } }],
  ['the own context set before', '/own/fail'],
  ['the own context set after', '/own-after/fail'],
  ['an unknown route', '/nowhere?x=1'],
  ['a bad URL', '/%zz', {}, false],
  ['a wrong method', '/items'],
  // Trivium's CORS and security headers leave the host's routes alone (protections' guest defaults).
  ['a cross-origin request to a host route', '/ok', { headers: { origin: 'https://page.example' } }],
  [
    "a preflight for a host route (the host has no CORS: Fastify's 404)",
    '/items',
    {
      method: 'OPTIONS',
      headers: { origin: 'https://page.example', 'access-control-request-method': 'POST' },
    },
  ],
]

async function legacyAnswers(s: Service) {
  const answers: { name: string; answer: Answer; logs: unknown[] }[] = []
  for (const [name, path, init, logged] of LEGACY) {
    answers.push({ name, ...(await s.exchange(path, init, logged)) })
  }
  return answers
}

for (const rootHandler of [false, true]) {
  t.test(
    `the service answers and logs the same with and without Trivium (${rootHandler ? 'its own root error handler' : "Fastify's error handler"})`,
    async (t) => {
      const without = await service({ trivium: false, rootHandler })
      t.teardown(() => without.close())
      // Fastify's warnings (FSTWRN004: an error handler replaced) are process warnings.
      const warnings: Error[] = []
      const onWarning = (warning: Error) => warnings.push(warning)
      process.on('warning', onWarning)
      const withTrivium = await service({ trivium: true, rootHandler })
      t.teardown(() => withTrivium.close())
      await new Promise((resolve) => setImmediate(resolve)) // process warnings are emitted on the next tick
      process.off('warning', onWarning)
      t.same(
        warnings.map((w) => w.name),
        [],
        'no warning: no error handler of the app replaced',
      )
      const before = await legacyAnswers(without)
      const after = await legacyAnswers(withTrivium)
      for (let i = 0; i < before.length; i++) {
        const { name, answer, logs } = before[i] as (typeof before)[number]
        t.same(after[i]?.answer, answer, `${name}: the same answer`)
        t.same(after[i]?.logs, logs, `${name}: the same log lines`)
      }
      // What the cases are, so the diff cannot pass on two empty answers.
      const status = Object.fromEntries(before.map((b) => [b.name, b.answer.status]))
      t.match(status, {
        'schema error': 400,
        "@fastify/jwt's missing header": 401,
        'a 418': 418,
        'a 503 of the app': 503,
        "@fastify/auth's refusal (reply.code(401), an error without a status)": 401,
        'an app hook throwing a 403': 403,
        '@fastify/rate-limit: 429': 429,
        'an unknown route': 404,
      })
      const schema = JSON.parse(before[0]?.answer.body ?? '{}')
      const message = "body must have required property 'name'"
      if (rootHandler) t.same(schema, { mine: true, message })
      else t.same(schema, { statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message })
      t.same(JSON.parse(before.find((b) => b.name === 'the own context set after')?.answer.body ?? ''), {
        mine: true,
        message: 'Unprocessable in the own context',
      })
    },
  )
}

/** The Trivium error body, with the request id it must carry. */
function triviumBody(statusCode: number, code: string, error: string, message: string, extra = {}) {
  return { statusCode, code, error, message, requestId: /^req-/, ...extra }
}

t.test(
  "Trivium's endpoints and opted-in routes: Trivium's error body, a hook's status and headers kept",
  async (t) => {
    const s = await service({ trivium: true, rootHandler: true })
    t.teardown(() => s.close())
    const call = async (path: string, headers: Record<string, string> = {}) => {
      const { answer, logs } = await s.exchange(path, { headers })
      t.equal(answer.headers['content-type'], 'application/json; charset=utf-8', `${path}: JSON`)
      return { status: answer.status, body: JSON.parse(answer.body), headers: answer.headers, logs }
    }
    t.same((await call('/hello')).body, { hello: 1 })
    const cases: [string, Record<string, string>, number, ReturnType<typeof triviumBody>][] = [
      [
        'an app hook throwing a 403',
        { 'x-deny': '1' },
        403,
        triviumBody(403, 'TRV_FORBIDDEN', 'ForbiddenException', 'Forbidden'),
      ],
      [
        'an under-pressure 503',
        { 'x-pressure': '1' },
        503,
        triviumBody(503, 'TRV_SERVICE_UNAVAILABLE', 'ServiceUnavailableException', 'Service Unavailable'),
      ],
      [
        "@fastify/jwt's missing header",
        { 'x-jwt': '1' },
        401,
        triviumBody(401, 'TRV_UNAUTHORIZED', 'UnauthorizedException', 'Unauthorized'),
      ],
      [
        "@fastify/auth's reply.code(401)",
        { 'x-auth': '1' },
        401,
        triviumBody(401, 'TRV_UNAUTHORIZED', 'UnauthorizedException', 'Unauthorized'),
      ],
    ]
    for (const [name, headers, status, body] of cases) {
      const res = await call('/hello', headers)
      t.equal(res.status, status, name)
      t.match(res.body, body, name)
      t.same(Object.keys(res.body).sort(), ['code', 'error', 'message', 'requestId', 'statusCode'], name)
      t.notOk(
        res.logs.some((l) => (l as { level: number }).level >= 50),
        `${name}: a refusal, not a server fault in the log`,
      )
    }

    // @fastify/rate-limit's 429 on an endpoint: its headers kept, Retry-After in the body too.
    t.equal((await call('/hello', { 'x-limit': 'endpoint' })).status, 200)
    const res = await fetch(`${s.base}/hello`, { headers: { 'x-limit': 'endpoint' } })
    t.equal(res.status, 429)
    const limited = await res.json()
    t.match(limited, triviumBody(429, 'TRV_RATE_LIMITED', 'RateLimitExceededException', 'Too Many Requests'))
    t.equal(res.headers.get('x-ratelimit-limit'), '1')
    t.equal(res.headers.get('x-ratelimit-remaining'), '0')
    t.match(res.headers.get('retry-after'), /^\d+$/)
    t.equal(limited.retryAfter, Number(res.headers.get('retry-after')), 'retryAfter is the Retry-After')
    t.ok(limited.retryAfter > 0)

    // A route that opted in: its schema error keeps Fastify's message, its 503 keeps its status.
    t.match((await call('/opted')).body, {
      ...triviumBody(
        400,
        'TRV_VALIDATION',
        'ValidationException',
        "querystring must have required property 'q'",
      ),
    })
    t.match(await call('/opted?q=down'), {
      status: 503,
      body: triviumBody(503, 'TRV_SERVICE_UNAVAILABLE', 'ServiceUnavailableException', 'Service Unavailable'),
    })
    t.same((await call('/opted?q=up')).body, { opted: true })
    t.match(await call('/opted/required'), {
      status: 401,
      body: triviumBody(401, 'TRV_UNAUTHORIZED', 'UnauthorizedException', 'Authentication required'),
    })
    t.match(await call('/opted', { 'x-deny': '1' }), {
      status: 403,
      body: triviumBody(403, 'TRV_FORBIDDEN', 'ForbiddenException', 'Forbidden'),
    })
  },
)
