// Issue 17, issue 31: the lean inject path (Node's request and response built in memory, `fastify.routing`): what it
// honours (body streams for preParsing hooks, stream replies, a hijacked reply, the request logger), and
// the TCP marker no HTTP client can forge. Its source uses no private field of Fastify, Node or ws.
import { once } from 'node:events'
import { Readable } from 'node:stream'
import triviumCore from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import triviumTcp from '@trivium/tcp'
import { FrameType } from '@trivium/wire'
import Fastify, { type FastifyServerOptions } from 'fastify'
import t, { type Test } from 'tap'
import { dec, requestFrame, TcpClient, until } from './helpers.ts'
import { bridgeCall, definitionOf, InjectBridge, tcpOverride } from './inject-helpers.ts'

const text = (b: Uint8Array | string) => Buffer.from(b).toString()

/** An app with core and a lean bridge (not ready yet: the test adds hooks and endpoints), closed at the end. */
async function withBridge(t: Test, options: FastifyServerOptions = { logger: false }) {
  const app = Fastify(options)
  await app.register(triviumCore)
  t.teardown(() => app.close())
  return { app, bridge: new InjectBridge(app) }
}

t.test('a hijacked reply is answered with what the hijacker wrote, on the lean path', async (t) => {
  const { app, bridge } = await withBridge(t)
  app.addHook('preHandler', async (request, reply) => {
    if (request.url !== '/hijacked') return
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'application/json' })
    reply.raw.write('{"hijacked":')
    reply.raw.end('true}')
  })
  app.trivium.endpoint('hijacked', { method: 'GET', url: '/hijacked' }, () => ({ handler: true }))
  await app.ready()
  for (let i = 0; i < 2; i++) {
    const out = await bridgeCall(bridge, app, 'hijacked')
    t.same(
      { path: out.path, ok: out.ok, body: text(out.body) },
      { path: 'lean', ok: true, body: '{"hijacked":true}' },
    )
  }
  t.equal(bridge.usesFallback(), false, "Node's own ServerResponse: no fallback needed")
  t.equal((await app.inject({ url: '/hijacked' })).body, '{"hijacked":true}', 'as app.inject() answers')
})

t.test('a stream reply (onSend returns a Readable) is collected on the lean path', async (t) => {
  const { app, bridge } = await withBridge(t)
  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.url !== '/streamed') return payload
    return Readable.from([Buffer.from('{"parts":['), Buffer.from('1,2'), Buffer.from(`],"was":${payload}}`)])
  })
  app.trivium.endpoint('streamed', { method: 'GET', url: '/streamed' }, () => ({ n: 1 }))
  await app.ready()
  const out = await bridgeCall(bridge, app, 'streamed')
  t.equal(out.path, 'lean')
  t.same(dec(out.body), { parts: [1, 2], was: { n: 1 } })
  t.equal(text(out.body), (await app.inject({ url: '/streamed' })).body, 'same bytes as app.inject()')
})

t.test('a preParsing hook can read the body as a stream and replace it', async (t) => {
  const { app, bridge } = await withBridge(t)
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (request.url !== '/echo') return payload
    const chunks: Buffer[] = []
    for await (const chunk of payload) chunks.push(chunk as Buffer)
    return Readable.from([Buffer.from(Buffer.concat(chunks).toString().replace('"a"', '"b"'))])
  })
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  await app.ready()
  const out = await bridgeCall(bridge, app, 'echo', { a: 1 })
  t.equal(out.path, 'lean')
  t.same(dec(out.body), { b: 1 })
})

t.test(
  "the response emits 'close' after 'finish', as an HTTP response does (cleanup listeners run)",
  async (t) => {
    const { app, bridge } = await withBridge(t)
    const events: string[][] = []
    app.addHook('onRequest', (_request, reply, done) => {
      const seen: string[] = []
      events.push(seen)
      reply.raw.once('finish', () => seen.push('finish'))
      reply.raw.once('close', () => seen.push(`close (finished: ${reply.raw.writableFinished})`))
      done()
    })
    app.trivium.endpoint('plain', { method: 'GET', url: '/plain' }, () => ({ plain: true }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    await fetch(`http://127.0.0.1:${port}/plain`).then((r) => r.text())
    for (let i = 0; i < 2; i++) t.equal((await bridgeCall(bridge, app, 'plain')).ok, true)
    await until(
      () => events.length === 3 && events.every((seen) => seen.length === 2),
      "every response's close",
    )
    t.same(
      events,
      Array(3).fill(['finish', 'close (finished: true)']),
      'HTTP, then two calls on the lean path',
    )
  },
)

t.test('the request logger sees method, url and the TCP peer address', async (t) => {
  const lines: Record<string, unknown>[] = []
  const stream = { write: (line: string) => lines.push(JSON.parse(line)) }
  const { app, bridge } = await withBridge(t, { logger: { level: 'info', stream } })
  app.trivium.endpoint('plain', { method: 'GET', url: '/plain' }, () => ({ plain: true }))
  await app.ready()
  const out = await bridge.call({
    definition: definitionOf(app, 'plain'),
    format: jsonFormat,
    accept: jsonFormat,
    payload: new Uint8Array(0),
    override: { ...tcpOverride(), clientIp: '10.1.2.3' },
    entry: new (await import('@trivium/wire')).Cancellation(false),
    requestId: 'c1:1',
  })
  t.equal(out.ok, true)
  await until(() => lines.some((l) => l.msg === 'request completed'), 'the access log line')
  const incoming = lines.find((l) => l.msg === 'incoming request') as { req: Record<string, unknown> }
  t.match(incoming?.req, { method: 'GET', url: '/plain', remoteAddress: '10.1.2.3' })
  t.ok(
    lines.some((l) => l.msg === 'request completed' && (l.res as { statusCode: number }).statusCode === 200),
  )
})

t.test('the TCP marker: set for bridged calls on both paths, unforgeable over HTTP', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumTcp, { port: 0, mode: 'inject' })
  const fallback = new InjectBridge(app, { lean: false })
  app.trivium.endpoint('whoami', { method: 'GET', url: '/whoami' }, (_b, call) => ({
    protocol: call.protocol,
    metadata: { ...call.metadata },
    ip: call.clientIp ?? null,
  }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())

  const c = await TcpClient.open(app.triviumTcp.address()?.port as number)
  t.teardown(() => c.socket.destroy())
  c.write(requestFrame(1, 'whoami', {}, { trace: 'x1' }))
  t.same(dec((await c.reply(1))?.payload as Uint8Array), {
    protocol: 'tcp',
    metadata: { format: 'json', trace: 'x1' },
    ip: '127.0.0.1',
  })
  const viaFallback = await bridgeCall(fallback, app, 'whoami', {})
  t.equal(viaFallback.path, 'inject')
  t.same(dec(viaFallback.body), { protocol: 'tcp', metadata: {}, ip: '127.0.0.1' })

  // HTTP clients: headers, query, and light-my-request's own `simulate` option carry nothing
  const port = (app.server.address() as { port: number }).port
  const real = await fetch(`http://127.0.0.1:${port}/whoami?protocol=tcp&auth_token=x`, {
    headers: { 'x-trivium-transport': 'tcp', 'x-forwarded-for': '10.0.0.1', 'x-protocol': 'tcp' },
  })
  t.same(await real.json(), { protocol: 'http', metadata: {}, ip: '127.0.0.1' })
  const injected = await app.inject({
    url: '/whoami',
    simulate: { end: true, override: { protocol: 'tcp' } } as never,
  })
  t.same(injected.json(), { protocol: 'http', metadata: {}, ip: '127.0.0.1' })
})

t.test(
  'CANCEL while a preParsing hook holds a JSON body: the request closes, the connection keeps serving',
  async (t) => {
    // Node errors the aborted request ('aborted'); core's UTF-8 check stream passes the error on before
    // Fastify's body reader listens to it (an 'error' without a listener would end the process).
    const app = Fastify({ logger: false })
    await app.register(triviumCore)
    await app.register(triviumTcp, { port: 0, mode: 'inject' })
    const hook = { held: 0, closed: 0 }
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (request.url !== '/held') return payload
      hook.held++
      // once() rejects on the request's 'aborted' error, which precedes its close
      if (!request.raw.destroyed) await once(request.raw, 'close').catch(() => {})
      hook.closed++
      return payload
    })
    app.trivium.endpoint('held', { method: 'POST', url: '/held' }, (body) => body)
    app.trivium.endpoint('plain', { method: 'GET', url: '/plain' }, () => ({ plain: true }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const c = await TcpClient.open(app.triviumTcp.address()?.port as number)
    t.teardown(() => c.socket.destroy())
    c.write(requestFrame(1, 'held', { a: 1 }))
    await until(() => hook.held === 1, 'the call to reach the handler')
    c.write(new Uint8Array([0, 0, 0, 5, 0, 0, 0, 1, FrameType.CANCEL]))
    await until(() => hook.closed === 1, 'the hook to see the cancel')
    t.same(hook, { held: 1, closed: 1 }, 'the hook saw the call cancelled')
    c.write(requestFrame(2, 'plain', {}))
    t.same(dec((await c.reply(2))?.payload as Uint8Array), { plain: true })
    t.notOk(
      c.frames.some((f) => f.requestId === 1),
      'nothing for the cancelled id',
    )
  },
)
