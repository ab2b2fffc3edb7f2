// @trivium/tracing: one SERVER span per call on HTTP, WebSocket and TCP, continuing the caller's trace
// from `traceparent` (sent by @trivium/client on every transport), with endpoint, transport, status and
// user id and never the token. Checked with the SDK's in-memory exporter.
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import triviumAuth from '@trivium/auth'
import { createClient, type EndpointSpec } from '@trivium/client/node'
import { anyModel, triviumCorePlugin, UnauthorizedException } from '@trivium/core'
import { triviumTcpPlugin } from '@trivium/tcp'
import triviumTracing, { formatTraceparent, parseTraceparent } from '@trivium/tracing'
import { triviumWebSocketPlugin } from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(provider)

const TOKEN = 'secret-token-of-user-42'
const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'

async function server() {
  const app = Fastify()
  await app.register(triviumCorePlugin)
  await app.register(triviumTracing)
  // A stand-in for @trivium/auth: sets the spec's context key (and identity) from the token.
  app.trivium.use(
    async (call, next) => {
      const token =
        call.metadata.auth_token ??
        (call.query.token as string | undefined) ??
        call.headers.authorization?.toString().replace('Bearer ', '')
      if (token !== TOKEN) throw new UnauthorizedException('Invalid token')
      call.context.user_id = 42
      // Child span inside the call's span (the handler's work shows under it).
      return trace.getTracer('test').startActiveSpan('auth.check', async (span) => {
        try {
          return await next()
        } finally {
          span.end()
        }
      })
    },
    { name: 'auth' },
  )
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (req: { text: string }) => ({
    text: req.text,
  }))
  await app.register(triviumWebSocketPlugin)
  await app.register(triviumTcpPlugin, { port: 0 })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return { app, port: Number(new URL(address).port), tcpPort: app.triviumTcp.address()!.port }
}

const echo: EndpointSpec = {
  name: 'echo',
  method: 'POST',
  url: '/echo',
  request: anyModel,
  response: anyModel,
  streaming: false,
}

/** Polls `cond` until it holds; the deadline is generous so that a loaded machine only makes it slower. */
async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitBound(timeoutMs)
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

function serverSpans(): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER)
}

t.test('traceparent parsing', async (t) => {
  t.same(parseTraceparent(PARENT), {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: 1,
    isRemote: true,
  })
  for (const bad of [
    undefined,
    '',
    'garbage',
    `ff${PARENT.slice(2)}`,
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
  ])
    t.equal(parseTraceparent(bad), undefined, String(bad))
  t.equal(formatTraceparent(parseTraceparent(PARENT)!), PARENT)
})

t.test('one span per call on HTTP, WebSocket and TCP, continuing the client trace', async (t) => {
  const { port, tcpPort } = await server()
  for (const transport of ['http', 'websocket', 'tcp'] as const) {
    exporter.reset()
    const common = { token: TOKEN, traceparent: PARENT, endpoints: { echo }, format: 'json' as const }
    const client = createClient(
      transport === 'http'
        ? { transport, url: `http://127.0.0.1:${port}`, ...common }
        : transport === 'websocket'
          ? { transport, url: `ws://127.0.0.1:${port}/ws`, ...common }
          : { transport, host: '127.0.0.1', port: tcpPort, ...common },
    )
    t.same(await client.call('echo', { text: 'hi' }), { text: 'hi' })
    await client.close()
    const spans = serverSpans()
    t.equal(spans.length, 1, `${transport}: one server span`)
    const span = spans[0]!
    t.equal(span.name, 'echo')
    t.equal(span.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c', `${transport}: same trace`)
    t.equal(span.parentSpanContext?.spanId, 'b7ad6b7169203331', `${transport}: child of the caller's span`)
    t.same(span.attributes, {
      'trivium.endpoint': 'echo',
      'trivium.transport': transport,
      'trivium.request_id': span.attributes['trivium.request_id'],
      'trivium.streaming': false,
      'rpc.system': 'trivium',
      'rpc.method': 'echo',
      'enduser.id': '42',
      'trivium.code': 'OK',
      'trivium.status_code': 200,
    })
    t.type(span.attributes['trivium.request_id'], 'string')
    const child = exporter.getFinishedSpans().find((s) => s.name === 'auth.check')
    t.equal(
      child?.parentSpanContext?.spanId,
      span.spanContext().spanId,
      `${transport}: middleware step is a child span`,
    )
    t.notOk(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.events])).includes(TOKEN))
  }
})

t.test('a refused call is an error span with its code; without traceparent a new trace starts', async (t) => {
  const { app } = await server()
  exporter.reset()
  const res = await app.inject({
    method: 'POST',
    url: '/echo',
    payload: { text: 'x' },
    headers: { authorization: 'Bearer nope' },
  })
  t.equal(res.statusCode, 401)
  const [span] = serverSpans()
  t.equal(span!.status.code, SpanStatusCode.ERROR)
  t.equal(span!.status.message, 'TRV_UNAUTHORIZED')
  t.equal(span!.attributes['trivium.code'], 'TRV_UNAUTHORIZED')
  t.equal(span!.attributes['trivium.status_code'], 401)
  t.equal(span!.attributes['enduser.id'], undefined)
  t.equal(span!.parentSpanContext, undefined)
})

// Issue 31: a plain route guarded by @trivium/auth (`config.triviumRoute`) is traced around the route, and
// its span carries the status Fastify sent (it was undefined: the guard's target had no status).
t.test('a guarded plain route: the span has the status of the response that was sent', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(triviumCorePlugin)
  await app.register(triviumTracing)
  await app.register(triviumAuth, {
    secret: 'tracing-test-secret-0123456789-abcdefgh',
    issuer: 'trivium-test',
  })
  const open = { config: { triviumRoute: { auth: 'public' as const } } }
  app.get('/legacy/ok', open, async () => ({ ok: true }))
  app.post('/legacy/created', open, async (_request, reply) => reply.code(201).send({ created: true }))
  app.get('/legacy/forbidden', open, async (_request, reply) => reply.code(403).send({ allowed: false }))
  app.get('/legacy/broken', open, async () => {
    throw new Error('the route failed')
  })
  app.get('/legacy/private', { config: { triviumRoute: { name: 'legacy.private' } } }, async () => ({}))
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const cases = [
    { method: 'GET', url: '/legacy/ok', status: 200, code: 'OK' },
    { method: 'POST', url: '/legacy/created', status: 201, code: 'OK' },
    { method: 'GET', url: '/legacy/forbidden', status: 403, code: undefined },
    { method: 'GET', url: '/legacy/broken', status: 500, code: undefined },
    // Refused by the auth middleware before the route runs: the error's code and status.
    { method: 'GET', url: '/legacy/private', status: 401, code: 'TRV_UNAUTHORIZED' },
  ]
  for (const via of ['inject', 'socket'] as const) {
    for (const c of cases) {
      exporter.reset()
      const status =
        via === 'inject'
          ? (await app.inject({ method: c.method as 'GET', url: c.url })).statusCode
          : (await fetch(`${address}${c.url}`, { method: c.method })).status
      t.equal(status, c.status, `${via} ${c.method} ${c.url}: answered ${c.status}`)
      // The span ends when the response has been sent (its 'close'), after the client has it.
      await until(() => serverSpans().length === 1, `the span of ${c.url}`)
      const span = serverSpans()[0]!
      t.equal(span.name, c.url === '/legacy/private' ? 'legacy.private' : `${c.method} ${c.url}`)
      t.equal(span.attributes['trivium.status_code'], c.status, `${via} ${c.url}: status_code ${c.status}`)
      t.equal(span.attributes['trivium.code'], c.code, `${via} ${c.url}: code ${c.code}`)
      t.equal(span.attributes['trivium.transport'], 'http')
      t.equal(
        span.status.code,
        c.status >= 500 || c.code === 'TRV_UNAUTHORIZED' ? SpanStatusCode.ERROR : SpanStatusCode.UNSET,
        `${via} ${c.url}: span status`,
      )
    }
  }
})

t.test('the client refuses a traceparent that is not a string or function', async (t) => {
  t.throws(() => createClient({ transport: 'http', url: 'http://x', traceparent: 5 as never }), {
    message: /traceparent must be a string or a function/,
  })
})
