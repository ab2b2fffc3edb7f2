// An existing Fastify 5 service with every official plugin (issue 40 "Done when"): its routes, errors,
// error handler, logs, WebSocket route and `request.user`, observed over real sockets. Run as
// `node host-diff.js none|before|after`: without Trivium, with Trivium's packages registered (package defaults)
// before the service's plugins and routes, or after them. It prints one JSON report of what the service's
// clients see; test/host-diff.ts asserts the service's part is identical in the three runs.
import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import fastifyAuth from '@fastify/auth'
import fastifyCompress from '@fastify/compress'
import fastifyCors from '@fastify/cors'
import fastifyHelmet from '@fastify/helmet'
import fastifyJwt from '@fastify/jwt'
import fastifyRateLimit from '@fastify/rate-limit'
import fastifySwagger from '@fastify/swagger'
import fastifyWebsocket from '@fastify/websocket'
import triviumAuth from '@trivium/auth'
import { createClient, type EndpointSpec } from '@trivium/client/node'
import trivium, { jsonSchemaModel } from '@trivium/core'
import triviumOpenApi from '@trivium/openapi'
import triviumProtections from '@trivium/protections'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify, { type FastifyInstance } from 'fastify'
import WebSocket from 'ws'

const mode = process.argv[2]
if (mode !== 'none' && mode !== 'before' && mode !== 'after')
  throw new Error('usage: host-diff none|before|after')

const HOST_SECRET = 'the-service-own-jwt-secret-the-service-own-jwt-secret'
const TRIVIUM_SECRET = 'trivium-has-its-own-secret-trivium-has-its-own-secret'
const ORIGIN = 'https://app.example.com'

const warnings: string[] = []
process.on('warning', (w: Error & { code?: string }) =>
  warnings.push(`${w.name} ${w.code ?? ''} ${w.message}`),
)

interface LogLine {
  level: number
  msg?: string
  reqId?: string
  err?: { type?: string; code?: string; message?: string; statusCode?: number }
  res?: { statusCode?: number }
  req?: { method?: string; url?: string }
}
const logLines: LogLine[] = []
const app = Fastify({
  logger: { level: 'info', stream: { write: (line: string) => void logLines.push(JSON.parse(line)) } },
})

const Empty = jsonSchemaModel<Record<string, never>>('Empty', { type: 'object' })
const Pong = jsonSchemaModel<{ pong: boolean }>('Pong', {
  type: 'object',
  properties: { pong: { type: 'boolean' } },
  required: ['pong'],
})

async function registerTrivium(app: FastifyInstance) {
  await app.register(trivium)
  await app.register(triviumAuth, { secret: TRIVIUM_SECRET, issuer: 'trivium-part' })
  await app.register(triviumProtections)
  await app.register(triviumWebSocket)
  await app.register(triviumTcp)
  await app.register(triviumOpenApi, { info: { title: 'Trivium part', version: '1.0.0' } })
  // Trivium's own endpoint: a token is required (the auth default).
  app.trivium.endpoint('ping', { method: 'GET', url: '/trv/ping', response: Pong }, () => ({ pong: true }))
}

async function registerService(app: FastifyInstance) {
  await app.register(fastifySwagger, { openapi: { info: { title: 'Service', version: '1.0.0' } } })
  await app.register(fastifyJwt, { secret: HOST_SECRET })
  await app.register(fastifyAuth)
  await app.register(fastifyHelmet)
  await app.register(fastifyCors, { origin: [ORIGIN] })
  await app.register(fastifyRateLimit, { global: false })
  await app.register(fastifyCompress, { threshold: 64 })
  await app.register(fastifyWebsocket)

  // The service's own error handler: answers its own errors, hands the rest to Fastify's.
  app.setErrorHandler((error: Error & { code?: string }, _request, reply) => {
    if (error.code === 'APP_CONFLICT')
      return reply.code(409).send({ handledBy: 'the app', message: error.message })
    throw error
  })

  app.post(
    '/items',
    {
      schema: {
        body: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
    },
    async (request, reply) => reply.code(201).send({ created: request.body }),
  )
  app.get('/items', async () => ({ items: ['a', 'b'] }))
  app.get('/me', { onRequest: (request) => request.jwtVerify() }, async (request) => ({ user: request.user }))
  app.get(
    '/hooked-user',
    {
      onRequest: async (request) => {
        request.user = { from: 'the app hook' }
      },
    },
    async (request) => ({ user: request.user }),
  )
  // A route opted in to Trivium's rules (`config.triviumRoute`, ignored without Trivium): request.user stays
  // what @fastify/jwt set (issue 40 item 3).
  app.get(
    '/opted-in',
    { onRequest: (request) => request.jwtVerify(), config: { triviumRoute: { auth: 'public' } } },
    async (request) => ({ user: request.user }),
  )
  app.get('/no-user', async (request) => ({ user: request.user === undefined ? 'undefined' : request.user }))
  app.get(
    '/guarded',
    {
      preHandler: app.auth([
        async (_request, reply) => {
          reply.code(401)
          throw new Error('refused by the app')
        },
      ]),
    },
    async () => ({ never: true }),
  )
  app.get('/teapot', async () => {
    throw Object.assign(new Error('I am a teapot'), { statusCode: 418 })
  })
  app.get('/unavailable', async () => {
    throw Object.assign(new Error('maintenance'), { statusCode: 503 })
  })
  app.get('/conflict', async () => {
    throw Object.assign(new Error('already there'), { code: 'APP_CONFLICT' })
  })
  app.get('/limited', { config: { rateLimit: { max: 2, timeWindow: '1 minute' } } }, async () => ({
    limited: 'not yet',
  }))
  app.get('/page', async (_request, reply) => reply.type('text/html').send('<p>the service</p>'))
  app.get('/big', async () => ({ rows: Array.from({ length: 200 }, (_, i) => ({ i, text: 'compress me' })) }))
  app.get('/echo', { websocket: true }, (socket) => {
    socket.on('message', (data: Buffer) => socket.send(`echo: ${data.toString()}`))
  })
}

// A refusal at registration or start is the report (the test shows it), not a crash.
try {
  if (mode === 'before') await registerTrivium(app)
  await registerService(app)
  if (mode === 'after') await registerTrivium(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
} catch (err) {
  console.log(JSON.stringify({ startError: `${(err as Error).name}: ${(err as Error).message}`, warnings }))
  process.exit(0)
}
const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('no TCP address for HTTP')
const port = address.port
logLines.length = 0 // the service's clients see what follows

// Headers whose values change from run to run (or by connection), not by what the service answers.
const VOLATILE = new Set(['date', 'connection', 'keep-alive', 'request-id', 'x-request-id'])
// @fastify/rate-limit's seconds until the window ends (and Retry-After) count down between runs.
const COUNTDOWN = new Set(['x-ratelimit-reset', 'retry-after'])

interface Answer {
  status: number | undefined
  headers: Record<string, string | string[] | undefined>
  body: unknown
}
let httpRequests = 0
function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<Answer> {
  httpRequests += 1
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          let raw = Buffer.concat(chunks)
          if (res.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw)
          const text = raw.toString('utf8')
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {}
          const kept = Object.entries(res.headers)
            .filter(([name]) => !VOLATILE.has(name))
            .map(([name, value]) => [
              name,
              COUNTDOWN.has(name) && /^\d{1,4}$/.test(String(value)) ? '<seconds>' : value,
            ])
          resolve({ status: res.statusCode, headers: Object.fromEntries(kept.sort()), body: parsed })
        })
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

function echo(): Promise<unknown> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/echo`)
    socket.on('open', () => socket.send('hello'))
    socket.on('message', (data: Buffer) => {
      socket.close(1000)
      resolve({ message: data.toString() })
    })
    socket.on('unexpected-response', (_req, res) => resolve({ refused: res.statusCode }))
    socket.on('error', (err) => resolve({ error: err.message }))
  })
}

const token = app.jwt.sign({ sub: 'u1', role: 'admin' }, { noTimestamp: true })
const answers: Record<string, unknown> = {
  schemaError: await call('POST', '/items', {}, {}),
  schemaValid: await call('POST', '/items', {}, { name: 'one' }),
  jwtMissing: await call('GET', '/me'),
  jwtValid: await call('GET', '/me', { authorization: `Bearer ${token}` }),
  hookedUser: await call('GET', '/hooked-user'),
  noUser: await call('GET', '/no-user'),
  authRefused: await call('GET', '/guarded'),
  teapot: await call('GET', '/teapot'),
  unavailable: await call('GET', '/unavailable'),
  appErrorHandler: await call('GET', '/conflict'),
  limited: [await call('GET', '/limited'), await call('GET', '/limited'), await call('GET', '/limited')],
  helmet: await call('GET', '/page'),
  corsPreflight: await call('OPTIONS', '/items', {
    origin: ORIGIN,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type',
  }),
  corsPreflightOtherOrigin: await call('OPTIONS', '/items', {
    origin: 'https://elsewhere.example',
    'access-control-request-method': 'POST',
  }),
  corsSimple: await call('GET', '/items', { origin: ORIGIN }),
  compressed: await call('GET', '/big', { 'accept-encoding': 'gzip' }),
  notFound: await call('GET', '/nope'),
}
const webSocketEcho = await echo()

// Every HTTP request's log lines are written by the time its 'request completed' line is.
const deadline = Date.now() + 10_000
const completed = () => logLines.filter((l) => l.msg === 'request completed' && l.req?.url !== '/echo').length
while (completed() < httpRequests && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))

// The service's log lines per request, in request order: level, message, error type and status.
const byRequest = new Map<string, unknown[]>()
for (const line of logLines) {
  if (line.reqId === undefined) continue
  const entry = {
    level: line.level,
    msg: line.msg,
    ...(line.req ? { req: `${line.req.method} ${line.req.url}` } : {}),
    ...(line.res ? { status: line.res.statusCode } : {}),
    ...(line.err ? { err: { type: line.err.type, code: line.err.code, message: line.err.message } } : {}),
  }
  const list = byRequest.get(line.reqId) ?? []
  list.push(entry)
  byRequest.set(line.reqId, list)
}
const logs = [...byRequest.values()]

// The service's OpenAPI document (@fastify/swagger), Trivium's own paths left out.
const TRIVIUM_PATHS = ['/trv/ping', '/ws', '/openapi.json', '/docs']
const document = app.swagger() as { paths?: Record<string, unknown> }
const swagger = {
  ...document,
  paths: Object.fromEntries(Object.entries(document.paths ?? {}).filter(([p]) => !TRIVIUM_PATHS.includes(p))),
}

// The opted-in route: its headers are Trivium's to add, its status and body (request.user) are the app's.
const optedInAnswer = await call('GET', '/opted-in', { authorization: `Bearer ${token}` })
const optedIn = { status: optedInAnswer.status, body: optedInAnswer.body }

// Trivium's own endpoint, over HTTP and WebSocket (/ws), with no token.
let triviumPart: unknown
if (mode !== 'none') {
  const endpoints = {
    ping: { name: 'ping', method: 'GET', url: '/trv/ping', request: Empty, response: Pong, streaming: false },
  } satisfies Record<string, EndpointSpec>
  const ws = createClient({ transport: 'websocket', url: `ws://127.0.0.1:${port}/ws`, endpoints })
  const overWebSocket = await ws.call('ping', {}).then(
    (value) => ({ value }),
    (err: { name?: string; message?: string; statusCode?: number; code?: string }) => ({
      error: { name: err.name, message: err.message, statusCode: err.statusCode, code: err.code },
    }),
  )
  await ws.close()
  triviumPart = { http: await call('GET', '/trv/ping'), webSocket: overWebSocket }
}

await app.close()
console.log(
  JSON.stringify({ answers, webSocketEcho, logs, swagger, warnings, optedIn, trivium: triviumPart }),
)
