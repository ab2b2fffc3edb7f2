// One frame session, one behaviour: the rules of PROTOCOL.md "Frames" that the WebSocket and TCP
// servers used to implement twice (and differently), run over WebSocket, TCP direct and TCP inject.
import { MemoryBus } from '@trivium/websocket'
import { FrameType } from '@trivium/wire'
import t from 'tap'
import { CARRIAGES, dec, RawClient, rawApp, request, until } from './raw-frames.ts'

const EXPIRED = {
  statusCode: 401,
  code: 'TRV_TOKEN_EXPIRED',
  error: 'TokenExpiredException',
  message: 'Token has expired',
}

for (const carriage of CARRIAGES) {
  const mode = carriage === 'tcp-inject' ? 'inject' : 'direct'

  t.test(`${carriage}: a request id is free the moment its CANCEL is read`, async (t) => {
    const server = await rawApp({ tcp: { mode } })
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server)
    c.write(request(5, 'slow', { ms: 5000 }))
    await until(() => server.started() === 1, 'the slow call to start')
    // CANCEL id 5 then REQUEST id 5 in the same write: the second is a new call.
    c.write(
      { type: FrameType.CANCEL, requestId: 5, payload: new Uint8Array(0) },
      request(5, 'echo', { again: true }),
    )
    const frames = await c.until((f) => f.some((x) => x.requestId === 5))
    const answers = frames.filter((f) => f.requestId === 5)
    t.equal(answers.length, 1, 'one answer for id 5: the new call')
    t.equal(answers[0]?.type, FrameType.RESPONSE)
    t.same(dec(answers[0]?.payload), { again: true })
    await until(() => server.finished() === 1, 'the cancelled call to end')
    // A round trip: anything sent for the cancelled call has arrived once this reply has.
    c.write(request(6, 'echo', {}))
    await c.until((f) => f.some((x) => x.requestId === 6))
    t.equal(frames.filter((f) => f.requestId === 5).length, 1, 'nothing more for the cancelled call')
    c.close()
  })

  t.test(`${carriage}: SUBSCRIBE is authorized (authorizeSubscribe)`, async (t) => {
    const authorizeSubscribe = (topic: string, session: { userId: string | undefined }) =>
      !topic.startsWith('admin.') || session.userId === '1'
    const server = await rawApp({ ws: { authorizeSubscribe }, tcp: { mode, authorizeSubscribe } })
    t.teardown(() => server.app.close())
    const c = await RawClient.open(carriage, server, 'u2')
    c.write(request(1, 'echo', {})) // identifies the session as user 2
    await c.until((f) => f.some((x) => x.requestId === 1))
    c.write(
      { type: FrameType.SUBSCRIBE, requestId: 2, topic: 'admin.secrets', payload: new Uint8Array(0) },
      { type: FrameType.SUBSCRIBE, requestId: 3, topic: 'news', payload: new Uint8Array(0) },
    )
    await c.until((f) => f.some((x) => x.requestId === 2) && f.some((x) => x.requestId === 3))
    const refused = c.answerTo(2)
    t.equal(refused?.type, FrameType.ERROR)
    t.match(dec(refused?.payload), {
      statusCode: 403,
      code: 'TRV_FORBIDDEN',
      error: 'ForbiddenException',
      message: 'Not allowed to subscribe to admin.secrets',
    })
    t.equal(c.answerTo(3)?.type, FrameType.RESPONSE)
    await server.app.push.toTopic('admin.secrets', { leaked: true })
    await server.app.push.toTopic('news', { n: 1 })
    const pushes = (await c.until((f) => f.some((x) => x.type === FrameType.PUSH))).filter(
      (f) => f.type === FrameType.PUSH,
    )
    // admin.secrets was pushed first: had it leaked, it would have arrived before news.
    t.same(
      pushes.map((p) => p.topic),
      ['news'],
    )
    c.close()
  })

  t.test(`${carriage}: REQUEST, CANCEL and SUBSCRIBE with request id 0 get ERROR id 0`, async (t) => {
    const server = await rawApp({ tcp: { mode } })
    t.teardown(() => server.app.close())
    for (const [type, name] of [
      [FrameType.REQUEST, 'REQUEST'],
      [FrameType.CANCEL, 'CANCEL'],
      [FrameType.SUBSCRIBE, 'SUBSCRIBE'],
    ] as const) {
      const c = await RawClient.open(carriage, server)
      const frame =
        type === FrameType.REQUEST
          ? request(0, 'echo', {})
          : type === FrameType.SUBSCRIBE
            ? { type, requestId: 0, topic: 'news', payload: new Uint8Array(0) }
            : { type, requestId: 0, payload: new Uint8Array(0) }
      c.writeWithIdZero(frame)
      const frames = await c.until((f) => f.some((x) => x.type === FrameType.ERROR))
      const error = frames.find((f) => f.type === FrameType.ERROR)
      t.equal(error?.requestId, 0, `${name}: ERROR for id 0`)
      t.match(dec(error?.payload), {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        message: `${name} needs a request id other than 0`,
      })
      if (carriage === 'websocket') {
        // Message boundaries keep a WebSocket in sync: the connection stays open and keeps working.
        c.write(request(9, 'echo', { still: 'open' }))
        await c.until((f) => f.some((x) => x.requestId === 9))
        t.same(dec(c.answerTo(9)?.payload), { still: 'open' }, `${name}: the connection stays open`)
        t.notOk(c.ended)
      } else {
        await c.closed // TCP: a malformed frame ends the connection (PROTOCOL.md "TCP")
        t.ok(c.ended, `${name}: TCP closes after the ERROR`)
      }
      c.close()
    }
  })

  t.test(`${carriage}: the session ends when its token expires: ERROR id 0, then close`, async (t) => {
    const server = await rawApp({ tcp: { mode } })
    t.teardown(() => server.app.close())
    const exp = Math.floor(Date.now() / 1000) + 1
    const c = await RawClient.open(carriage, server, `u3:${exp}`)
    c.write(request(1, 'echo', {}))
    await c.closed
    const error = c.frames.find((f) => f.type === FrameType.ERROR)
    t.equal(error?.requestId, 0)
    t.match(dec(error?.payload), EXPIRED)
    t.ok(Date.now() >= exp * 1000, 'not before the expiry')
    if (carriage === 'websocket') {
      t.equal(c.closeCode, 4001)
      t.equal(c.closeReason, 'Token has expired')
    }
  })
}

t.test('push crosses instances through the bus with TCP as the only frame transport', async (t) => {
  const bus = new MemoryBus()
  const { default: Fastify } = await import('fastify')
  const { default: triviumCore } = await import('@trivium/core')
  const { default: triviumTcp } = await import('@trivium/tcp')
  const instances = await Promise.all(
    [0, 1].map(async () => {
      const app = Fastify({ logger: false })
      await app.register(triviumCore)
      await app.register(triviumTcp, { port: 0, bus })
      await app.ready()
      return app
    }),
  )
  t.teardown(() => Promise.all(instances.map((a) => a.close())))
  const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]]
  const c = await RawClient.open('tcp-direct', {
    app: b,
    wsUrl: '',
    tcpPort: (b.triviumTcp.address() as { port: number }).port,
    finished: () => 0,
    started: () => 0,
  })
  c.write({ type: FrameType.SUBSCRIBE, requestId: 1, topic: 'news', payload: new Uint8Array(0) })
  await c.until((f) => f.some((x) => x.requestId === 1))
  await a.push.toTopic('news', { from: 'a' }) // published on instance a, delivered by instance b
  const frames = await c.until((f) => f.some((x) => x.type === FrameType.PUSH))
  const push = frames.find((f) => f.type === FrameType.PUSH)
  t.equal(push?.topic, 'news')
  t.same(dec(push?.payload), { from: 'a' })
  c.close()
})

t.test('a later frame transport given another bus is refused at start-up', async (t) => {
  const { default: Fastify } = await import('fastify')
  const { default: triviumCore } = await import('@trivium/core')
  const { default: triviumTcp } = await import('@trivium/tcp')
  const { default: triviumWebSocket } = await import('@trivium/websocket')
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumWebSocket, { bus: new MemoryBus() })
  app.register(triviumTcp, { port: 0, bus: new MemoryBus() })
  await t.rejects(async () => app.ready(), {
    message:
      '@trivium/tcp: fastify.push already exists with another bus; pass the same bus to every frame transport (or only to the first registered)',
  })
})

t.test('app.close() with defaults and unary calls in flight on WebSocket and TCP', async (t) => {
  // Default options, default pluginTimeout (10 s): before, the graces ran one after the other and
  // each equalled pluginTimeout, so close() rejected with "Plugin did not start in time".
  for (const tcpFirst of [false, true]) {
    const server = await rawApp({ tcpFirst })
    const ws = await RawClient.open('websocket', server)
    const tcp = await RawClient.open('tcp-direct', server)
    ws.write(request(1, 'slow', { ms: 60_000 }))
    tcp.write(request(1, 'slow', { ms: 60_000 }))
    await until(() => server.started() === 2, 'both slow calls to start')
    const started = Date.now()
    await t.resolves(
      server.app.close(),
      `close resolves (${tcpFirst ? 'TCP' : 'WebSocket'} registered first)`,
    )
    const took = Date.now() - started
    // The promise: in parallel, i.e. less than the two graces one after the other (6 s).
    t.ok(took < 6000, `both transports drained in parallel, well inside pluginTimeout (${took} ms)`)
    t.ok(took >= 2900, `the unary calls had the default grace of 3 s (${took} ms)`)
    t.equal(server.finished(), 2, 'the handlers were aborted at the end of the grace')
    for (const c of [ws, tcp]) {
      await until(() => c.ended, `${c.carriage} to be closed`)
      t.equal(c.frames.find((f) => f.type === FrameType.GOAWAY)?.requestId, 0, `${c.carriage}: GOAWAY`)
      t.ok(c.ended, `${c.carriage}: closed`)
    }
  }
})

t.test('a shutdown grace that does not fit Fastify pluginTimeout is refused at registration', async (t) => {
  await t.rejects(rawApp({ fastify: { pluginTimeout: 2000 }, ws: { shutdownGraceMs: 2000 } }), {
    message:
      "@trivium/websocket: shutdownGraceMs (2000) must be less than Fastify's pluginTimeout (2000), or app.close() fails; lower it or raise pluginTimeout",
  })
  // The default grace adapts: 30% of a short pluginTimeout (5 s: a machine at load 15 still closes inside it).
  const server = await rawApp({ fastify: { pluginTimeout: 5000 } })
  const c = await RawClient.open('tcp-direct', server)
  c.write(request(1, 'slow', { ms: 60_000 }))
  await until(() => server.started() === 1, 'the slow call to start')
  const started = Date.now()
  await server.app.close() // a grace that did not fit would make this reject (pluginTimeout)
  const took = Date.now() - started
  t.ok(took >= 1450 && took < 5000, `grace of 1.5 s with pluginTimeout 5 s (${took} ms)`)
})
