// Issue 17: a table of Fastify hook behaviours gives the same outcome through the inject bridge's lean
// path as through app.inject() (the bridge's fallback, and the test's own app.inject()) and real HTTP:
// status, body, the response headers the reply carried, the hooks that ran (in order) and what the
// onError hook saw. Plus: the lean path hands the hooks Node's own
// IncomingMessage (not light-my-request's emulation), and a CANCEL
// aborts the handler like a client leaving an HTTP request.
import { IncomingMessage } from 'node:http'
import triviumCore, { ForbiddenException } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import triviumTcp from '@trivium/tcp'
import { Cancellation, FrameType } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { dec, requestFrame, TcpClient, until } from './helpers.ts'
import {
  bridgeCall,
  cors,
  definitionOf,
  helmet,
  InjectBridge,
  tcpOverride,
  tick,
  withoutRequestId,
} from './inject-helpers.ts'

interface Seen {
  trace: string[]
  status: number | undefined
  headers: Record<string, unknown> | undefined
  lean: boolean | undefined
  aborted: boolean
  started: boolean
}

const seen: Seen = {
  trace: [],
  status: undefined,
  headers: undefined,
  lean: undefined,
  aborted: false,
  started: false,
}
function reset(): void {
  seen.trace = []
  seen.status = undefined
  seen.headers = undefined
  seen.lean = undefined
  seen.aborted = false
  seen.started = false
}

async function buildApp(): Promise<{
  app: FastifyInstance
  lean: InjectBridge
  fallback: InjectBridge
  httpPort: number
  tcpPort: number
}> {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(helmet)
  await app.register(cors, { origin: '*' })
  app.addHook('onRequest', async (request) => {
    seen.trace.push('onRequest')
    // Node's own request object (light-my-request's is a Readable that is not one)
    seen.lean = request.raw instanceof IncomingMessage
    if (request.url === '/guarded') throw new ForbiddenException('Guarded by an onRequest hook')
  })
  app.addHook('preParsing', async (_request, _reply, payload) => {
    seen.trace.push('preParsing')
    return payload
  })
  app.addHook('preValidation', async () => {
    seen.trace.push('preValidation')
  })
  app.addHook('preHandler', async (request, reply) => {
    seen.trace.push('preHandler')
    if (request.url === '/decorated') reply.header('x-decorated', 'by a preHandler hook')
  })
  app.addHook('preSerialization', async (_request, _reply, payload) => {
    seen.trace.push('preSerialization')
    return payload
  })
  app.addHook('onSend', async (request, reply, payload) => {
    seen.trace.push('onSend')
    if (request.url === '/rewritten') return JSON.stringify({ rewritten: JSON.parse(String(payload)) })
    if (request.url === '/coded') reply.code(202)
    return payload
  })
  app.addHook('onResponse', async (_request, reply) => {
    seen.trace.push('onResponse')
    seen.status = reply.statusCode
    const headers = { ...reply.getHeaders() }
    delete headers.date
    seen.headers = headers
  })
  app.addHook('onError', async (_request, _reply, error) => {
    seen.trace.push(`onError: ${error.message}`)
  })
  await app.register(triviumTcp, { port: 0, mode: 'inject' })
  const lean = new InjectBridge(app)
  const fallback = new InjectBridge(app, { lean: false })
  app.trivium.endpoint('plain', { method: 'GET', url: '/plain' }, () => ({ hello: 'world' }))
  app.trivium.endpoint('guarded', { method: 'GET', url: '/guarded' }, () => ({ reached: true }))
  app.trivium.endpoint('rewritten', { method: 'GET', url: '/rewritten' }, () => ({ a: 1 }))
  app.trivium.endpoint('decorated', { method: 'GET', url: '/decorated' }, () => ({ ok: true }))
  app.trivium.endpoint('coded', { method: 'GET', url: '/coded' }, () => ({ ok: true }))
  app.trivium.endpoint('boom', { method: 'GET', url: '/boom' }, () => {
    throw new Error('kaboom')
  })
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  app.trivium.endpoint('small', { method: 'POST', url: '/small', bodyLimit: 16 }, (body) => body)
  app.trivium.endpoint('wait', { method: 'POST', url: '/wait' }, (_body, call) => {
    seen.started = true
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ aborted: false }), 2000)
      call.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        seen.aborted = true
        resolve({ aborted: true })
      })
    })
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const httpPort = (app.server.address() as { port: number }).port
  return { app, lean, fallback, httpPort, tcpPort: app.triviumTcp.address()?.port as number }
}

interface Outcome {
  status: number | undefined
  body: unknown
  headers: Record<string, unknown> | undefined
  trace: string[]
}

async function settle(status: number | undefined, text: string): Promise<Outcome> {
  await until(() => seen.trace.includes('onResponse'), 'onResponse') // it runs after the response is out
  return {
    status: seen.status ?? status,
    body: withoutRequestId(text),
    headers: seen.headers,
    trace: seen.trace,
  }
}

const rows: Array<{ name: string; endpoint: string; method: 'GET' | 'POST'; url: string; body?: unknown }> = [
  { name: 'plain call', endpoint: 'plain', method: 'GET', url: '/plain' },
  { name: 'onRequest hook rejects', endpoint: 'guarded', method: 'GET', url: '/guarded' },
  { name: 'onSend rewrites the payload', endpoint: 'rewritten', method: 'GET', url: '/rewritten' },
  { name: 'reply.header in preHandler', endpoint: 'decorated', method: 'GET', url: '/decorated' },
  { name: 'reply.code in onSend', endpoint: 'coded', method: 'GET', url: '/coded' },
  { name: 'handler throws (onError)', endpoint: 'boom', method: 'GET', url: '/boom' },
  { name: 'JSON body', endpoint: 'echo', method: 'POST', url: '/echo', body: { x: [1, 'é'] } },
  {
    name: '413 from bodyLimit',
    endpoint: 'small',
    method: 'POST',
    url: '/small',
    body: { long: 'x'.repeat(40) },
  },
]

t.test('every row: lean path = app.inject() (bridge fallback and direct) = real HTTP', async (t) => {
  const { app, lean, fallback, httpPort } = await buildApp()
  t.teardown(() => app.close())
  for (const row of rows) {
    const headers: Record<string, string> = { accept: 'application/json' }
    const text = row.body === undefined ? undefined : JSON.stringify(row.body)
    if (text !== undefined) headers['content-type'] = 'application/json'

    reset()
    const viaLean = await bridgeCall(lean, app, row.endpoint, row.body)
    const leanSeen = seen.lean
    const leanOutcome = await settle(undefined, Buffer.from(viaLean.body).toString())
    t.equal(viaLean.path, 'lean', `${row.name}: served by the lean path`)
    t.equal(leanSeen, true, `${row.name}: Node's IncomingMessage reached the hooks`)

    reset()
    const viaFallback = await bridgeCall(fallback, app, row.endpoint, row.body)
    const fallbackOutcome = await settle(undefined, Buffer.from(viaFallback.body).toString())
    t.equal(viaFallback.path, 'inject')
    t.equal(viaLean.ok, viaFallback.ok, `${row.name}: ok`)

    reset()
    const injected = await app.inject({ method: row.method, url: row.url, headers, payload: text })
    const injectOutcome = await settle(injected.statusCode, injected.body)

    reset()
    const res = await fetch(`http://127.0.0.1:${httpPort}${row.url}`, {
      method: row.method,
      headers,
      body: text,
    })
    const httpOutcome = await settle(res.status, await res.text())

    t.same(leanOutcome, httpOutcome, `${row.name}: lean path = real HTTP`)
    t.same(leanOutcome, injectOutcome, `${row.name}: lean path = app.inject()`)
    t.same(fallbackOutcome, injectOutcome, `${row.name}: bridge fallback = app.inject()`)
    t.ok((leanOutcome.status ?? 0) > 0, `${row.name}: onResponse ran`)
  }
})

t.test('the table, spelled out for the lean path', async (t) => {
  const { app, lean } = await buildApp()
  t.teardown(() => app.close())
  const run = async (endpoint: string, body?: unknown) => {
    reset()
    const out = await bridgeCall(lean, app, endpoint, body)
    return { out, outcome: await settle(undefined, Buffer.from(out.body).toString()) }
  }
  const all = ['onRequest', 'preParsing', 'preValidation', 'preHandler', 'onSend', 'onResponse']

  let r = await run('plain')
  t.same(r.outcome.trace, all, 'every hook runs, in order')
  t.same(r.outcome.body, { hello: 'world' })
  t.equal(r.outcome.headers?.['x-frame-options'], 'SAMEORIGIN', '@fastify/helmet header')
  t.equal(r.outcome.headers?.['access-control-allow-origin'], '*', '@fastify/cors header')

  r = await run('guarded')
  t.equal(r.out.ok, false)
  t.match(r.outcome.body, { statusCode: 403, code: 'TRV_FORBIDDEN', message: 'Guarded by an onRequest hook' })
  t.same(r.outcome.trace, ['onRequest', 'onError: Guarded by an onRequest hook', 'onSend', 'onResponse'])

  r = await run('rewritten')
  t.same(r.outcome.body, { rewritten: { a: 1 } }, 'onSend rewrote the payload')

  r = await run('decorated')
  t.equal(r.outcome.headers?.['x-decorated'], 'by a preHandler hook')

  r = await run('coded')
  t.equal(r.outcome.status, 202)
  t.equal(r.out.ok, true)

  r = await run('boom')
  t.match(r.outcome.body, { statusCode: 500, code: 'TRV_INTERNAL', message: 'Internal server error' })
  t.same(r.outcome.trace, [
    'onRequest',
    'preParsing',
    'preValidation',
    'preHandler',
    'onError: kaboom',
    'onSend',
    'onResponse',
  ])

  r = await run('small', { long: 'x'.repeat(40) })
  t.match(r.outcome.body, { statusCode: 413 })
  t.equal(r.outcome.status, 413)

  // preSerialization runs for object payloads only: core sends serialized text, so it runs nowhere
  // for an endpoint route (the same over HTTP: the equality above covers it). A route that sends an
  // object shows the lean path runs it.
  t.notOk(seen.trace.includes('preSerialization'))
})

t.test('preSerialization runs on the lean path when the reply sends an object', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  const order: string[] = []
  app.addHook('preSerialization', async (_req, _reply, payload) => {
    order.push('preSerialization')
    return { ...(payload as object), serializedBy: 'hook' }
  })
  app.addHook('preHandler', async (request, reply) => {
    // A hook answering for the route with an object: Fastify serializes it after preSerialization.
    if (request.url === '/answered') return reply.send({ answeredBy: 'preHandler' })
  })
  const bridge = new InjectBridge(app)
  app.trivium.endpoint('answered', { method: 'GET', url: '/answered' }, () => ({ handler: true }))
  await app.ready()
  t.teardown(() => app.close())
  const out = await bridgeCall(bridge, app, 'answered')
  t.equal(out.path, 'lean')
  t.same(JSON.parse(Buffer.from(out.body).toString()), { answeredBy: 'preHandler', serializedBy: 'hook' })
  t.same(order, ['preSerialization'])
  const viaInject = await app.inject({ url: '/answered' })
  t.same(viaInject.json(), { answeredBy: 'preHandler', serializedBy: 'hook' })
})

t.test('CANCEL aborts the handler as a client leaving an HTTP request does', async (t) => {
  const { app, lean, httpPort, tcpPort } = await buildApp()
  t.teardown(() => app.close())

  // real HTTP: the client goes away
  reset()
  const controller = new AbortController()
  const pending = fetch(`http://127.0.0.1:${httpPort}/wait`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
    signal: controller.signal,
  }).catch((err: Error) => err.name)
  await until(() => seen.started, 'the handler to start')
  controller.abort()
  t.equal(await pending, 'AbortError')
  await until(() => seen.aborted && seen.trace.includes('onSend'), 'the aborted call to end')
  const http = { aborted: seen.aborted, trace: [...seen.trace] }

  // the lean path, directly: Cancellation.abort → the handler's call.signal
  reset()
  const entry = new Cancellation(false)
  const call = bridgeCall(lean, app, 'wait', {}, entry)
  await until(() => seen.started, 'the handler to start')
  entry.abort(new Error('cancelled'))
  const out = await call
  t.equal(out.ok, false)
  t.equal(out.body.length, 0, 'nothing to send for a cancelled call')
  await until(() => seen.aborted && seen.trace.includes('onSend'), 'the aborted call to end')
  t.same({ aborted: seen.aborted, trace: seen.trace }, http, 'same hooks, handler aborted')
  t.equal(http.aborted, true)

  // over TCP (the plugin's inject mode): nothing is sent for the id, the connection keeps working
  reset()
  const c = await TcpClient.open(tcpPort)
  t.teardown(() => c.socket.destroy())
  c.write(requestFrame(1, 'wait', {}))
  await until(() => seen.started, 'the handler to start')
  c.write(new Uint8Array([0, 0, 0, 5, 0, 0, 0, 1, FrameType.CANCEL]))
  await until(() => seen.aborted, 'CANCEL to abort call.signal')
  t.equal(seen.aborted, true, 'CANCEL aborted call.signal')
  c.write(requestFrame(2, 'plain', {}))
  t.same(dec((await c.reply(2))?.payload as Uint8Array), { hello: 'world' })
  t.notOk(
    c.frames.some((f) => f.requestId === 1),
    'nothing for the cancelled id',
  )
})

t.test('an abort before the route starts does not run it', async (t) => {
  const { app, lean } = await buildApp()
  t.teardown(() => app.close())
  reset()
  const entry = new Cancellation(false)
  entry.abort(new Error('cancelled'))
  const out = await lean.call({
    definition: definitionOf(app, 'plain'),
    format: jsonFormat,
    accept: jsonFormat,
    payload: new Uint8Array(0),
    override: tcpOverride(),
    entry,
    requestId: 'c1:1',
  })
  t.same({ ok: out.ok, length: out.body.length }, { ok: false, length: 0 })
  await tick()
  t.same(seen.trace, [], 'no hook ran')
})
