// Issue 41 item 1, streaming routes: a named Fastify route whose 2xx response is declared
// `content: { 'application/x-ndjson' | 'text/event-stream': { schema } }` is a server stream on every frame
// transport (WebSocket, TCP direct and inject, the in-memory carrier): each line or event is one item,
// checked against the item schema; CANCEL and the deadline destroy the route's stream; a line that is
// not JSON or not an item ends the stream with the 500 error body and leaves the process serving. HTTP
// answers exactly as without the name. What cannot be mapped is refused at start (PROTOCOL.md "Named routes").
import { connect } from 'node:net'
import { Readable, Writable } from 'node:stream'
import triviumAuth from '@trivium/auth'
import { createClient, type EndpointSpec, type WebSocketConstructor } from '@trivium/client/node'
import triviumCore from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import { encodeMetadata, encodeTcpFrame, type Frame, FrameType, TcpFrameReader } from '@trivium/wire'
import Fastify, { type FastifyInstance, type RouteShorthandOptions } from 'fastify'
import t from 'tap'
import { type MemoryWebSocket, registerMemoryTransport } from './memory-transport.ts'
import { CARRIAGES, dec, RawClient, request, until } from './raw-frames.ts'

const SECRET = 'named-streams-secret-named-streams-secret-01'
const item = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }
const ndjson = { 200: { content: { 'application/x-ndjson': { schema: item } } } }
const sse = { 200: { content: { 'text/event-stream': { schema: item } } } }
const count = { type: 'object', properties: { count: { type: 'integer', maximum: 100 } } }

interface StreamApp {
  app: FastifyInstance
  wsUrl: string
  tcpPort: number
  http: string
  memory: typeof MemoryWebSocket
  /** Streams of `ticks.forever` whose generator's `finally` ran. */
  stopped: () => number
  /** Error-level log lines. */
  logs: string[]
}

const lines = (items: unknown[]) => items.map((i) => (typeof i === 'string' ? i : `${JSON.stringify(i)}\n`))

async function* tick(n: number) {
  for (let i = 1; i <= n; i++) yield `${JSON.stringify({ n: i })}\n`
}

function routes(app: FastifyInstance, named: boolean, state: { stopped: number }): void {
  const as = (name: string, rest: RouteShorthandOptions = {}): RouteShorthandOptions => ({
    ...rest,
    config: { triviumRoute: { auth: 'public', ...(named ? { name } : {}) } },
  })
  app.get('/ticks', as('ticks.list', { schema: { querystring: count, response: ndjson } }), (req, reply) => {
    reply.type('application/x-ndjson')
    return reply.send(Readable.from(tick((req.query as { count: number }).count)))
  })
  app.get('/ticks/events', as('ticks.events', { schema: { response: sse } }), (_req, reply) => {
    reply.type('text/event-stream')
    const events = [': open\n\n', 'event: tick\nid: 1\ndata: {"n":1}\n\n', 'data: {"n":\r\ndata: 2}\r\n\r\n']
    return reply.send(Readable.from(events))
  })
  app.get('/ticks/forever', as('ticks.forever', { schema: { response: ndjson } }), (_req, reply) => {
    reply.type('application/x-ndjson')
    async function* forever() {
      try {
        for (let i = 1; ; i++) {
          yield `{"n":${i}}\n`
          await new Promise((r) => setTimeout(r, 5))
        }
      } finally {
        state.stopped++
      }
    }
    return reply.send(Readable.from(forever()))
  })
  for (const [name, url, body] of [
    ['ticks.bad', '/ticks/bad', lines([{ n: 1 }, 'not json\n', { n: 3 }])],
    ['ticks.wrong', '/ticks/wrong', lines([{ n: 'one' }])],
  ] as const) {
    app.get(url, as(name, { schema: { response: ndjson } }), (_req, reply) => {
      reply.type('application/x-ndjson')
      return reply.send(Readable.from(body))
    })
  }
  app.get('/ticks/json', as('ticks.json', { schema: { response: ndjson } }), async () => ({ n: 1 }))
  app.get(
    '/ticks/guarded',
    {
      schema: { response: ndjson },
      config: { triviumRoute: { auth: 'required', ...(named ? { name: 'ticks.guarded' } : {}) } },
    },
    (_req, reply) => reply.type('application/x-ndjson').send(Readable.from(tick(1))),
  )
}

async function streamApp(mode: 'direct' | 'inject', named = true): Promise<StreamApp> {
  const logs: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk))
      done()
    },
  })
  const app = Fastify({ logger: { level: 'error', stream } })
  await app.register(triviumCore)
  await app.register(triviumAuth, { secret: SECRET, issuer: 'named-streams' })
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0, mode })
  const memory = registerMemoryTransport(app)
  const state = { stopped: 0 }
  routes(app, named, state)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  return {
    app,
    wsUrl: `ws://127.0.0.1:${port}/ws?format=json`,
    tcpPort: (app.triviumTcp.address() as { port: number }).port,
    http: `http://127.0.0.1:${port}`,
    memory,
    stopped: () => state.stopped,
    logs,
  }
}

const apps = new Map<string, Promise<StreamApp>>()
function appFor(mode: 'direct' | 'inject'): Promise<StreamApp> {
  let app = apps.get(mode)
  if (app === undefined) {
    app = streamApp(mode)
    apps.set(mode, app)
  }
  return app
}
t.teardown(async () => {
  for (const app of apps.values()) await (await app).app.close()
})

/** The frames answering `id` once its stream has ended (STREAM_END or ERROR): items and the last frame. */
async function streamOf(client: RawClient, id: number) {
  const done = (f: { requestId: number; type: number }) =>
    f.requestId === id && (f.type === FrameType.STREAM_END || f.type === FrameType.ERROR)
  const frames = await client.until((fs) => fs.some(done))
  const mine = frames.filter((f) => f.requestId === id)
  const last = mine.find(done)
  return {
    items: mine.filter((f) => f.type === FrameType.STREAM_ITEM).map((f) => dec(f.payload)),
    end:
      last?.type === FrameType.STREAM_END
        ? 'end'
        : last?.type === FrameType.ERROR
          ? dec(last.payload)
          : undefined,
  }
}

for (const carriage of CARRIAGES) {
  t.test(carriage, async (t) => {
    const server = await appFor(carriage === 'tcp-inject' ? 'inject' : 'direct')
    const client = await RawClient.open(carriage, server)
    t.teardown(() => client.close())

    await t.test('NDJSON lines are the items, through the route with its query', async (t) => {
      client.write(request(1, 'ticks.list', { count: 3 }))
      t.same(await streamOf(client, 1), { items: [{ n: 1 }, { n: 2 }, { n: 3 }], end: 'end' })
      client.write(request(2, 'ticks.list', { count: 0 }))
      t.same(await streamOf(client, 2), { items: [], end: 'end' })
    })

    await t.test("SSE events' data are the items (comments, event names and ids are not)", async (t) => {
      client.write(request(3, 'ticks.events', {}))
      t.same(await streamOf(client, 3), { items: [{ n: 1 }, { n: 2 }], end: 'end' })
    })

    await t.test('a request its schema refuses, and the guard: the one error body', async (t) => {
      client.write(request(4, 'ticks.list', { count: 101 }))
      const refused = await streamOf(client, 4)
      t.same(refused.items, [])
      t.match(refused.end, {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        message: 'Invalid TicksListRequest: count must be <= 100',
        requestId: /:4$/,
      })
      client.write(request(5, 'ticks.guarded', {}))
      t.match((await streamOf(client, 5)).end, { statusCode: 401, code: 'TRV_UNAUTHORIZED' })
    })

    await t.test(
      'a line that is not JSON or not an item: 500 after the good items, process unharmed',
      async (t) => {
        client.write(request(6, 'ticks.bad', {}))
        const bad = await streamOf(client, 6)
        t.same(bad.items, [{ n: 1 }])
        t.match(bad.end, {
          statusCode: 500,
          code: 'TRV_INTERNAL',
          message: 'Internal server error',
          requestId: /:6$/,
        })
        client.write(request(7, 'ticks.wrong', {}))
        const logged = (reason: string) =>
          server.logs.filter((l) => l.includes(`streamed an item frames cannot carry (${reason})`)).length
        t.ok(logged('not JSON') >= 1, 'the route fault is logged with its reason')
        const wrong = await streamOf(client, 7)
        t.same(wrong.items, [], 'an item its schema refuses is not sent')
        t.match(wrong.end, { statusCode: 500, error: 'InternalErrorException', requestId: /:7$/ })
        t.ok(logged('Invalid TicksWrongResponse: n must be integer') >= 1, 'with the schema message')
        client.write(request(8, 'ticks.json', {}))
        t.match((await streamOf(client, 8)).end, { statusCode: 500, code: 'TRV_INTERNAL' })
        client.write(request(9, 'ticks.list', { count: 1 }))
        t.same(await streamOf(client, 9), { items: [{ n: 1 }], end: 'end' })
      },
    )

    await t.test("CANCEL mid-stream destroys the route's stream (its finally runs)", async (t) => {
      const before = server.stopped()
      client.write(request(10, 'ticks.forever', {}))
      await client.until(
        (fs) => fs.filter((f) => f.requestId === 10 && f.type === FrameType.STREAM_ITEM).length >= 2,
      )
      client.write({ type: FrameType.CANCEL, requestId: 10, payload: new Uint8Array(0) })
      await until(() => server.stopped() === before + 1, 'the route stream stopped')
      t.equal(server.stopped(), before + 1)
      client.write(request(11, 'ticks.list', { count: 2 }))
      t.same(await streamOf(client, 11), { items: [{ n: 1 }, { n: 2 }], end: 'end' })
    })

    await t.test("closing the connection mid-stream destroys the route's stream", async (t) => {
      const before = server.stopped()
      const gone = await RawClient.open(carriage, server)
      gone.write(request(1, 'ticks.forever', {}))
      await gone.until((fs) => fs.some((f) => f.type === FrameType.STREAM_ITEM))
      gone.close()
      await until(() => server.stopped() === before + 1, 'the route stream stopped')
      t.equal(server.stopped(), before + 1)
    })
  })
}

const spec = (name: string, url: string): EndpointSpec => ({
  name,
  method: 'GET',
  url,
  request: { fromJSON: (j: unknown) => j, toJSON: (v: unknown) => v },
  response: { fromJSON: (j: unknown) => j, toJSON: (v: unknown) => v },
  streaming: true,
})

async function collect(iterable: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const i of iterable) out.push(i)
  return out
}

for (const target of ['websocket', 'tcp', 'memory'] as const) {
  t.test(`@trivium/client over ${target}: items, and the deadline stops the route`, async (t) => {
    const server = await appFor('direct')
    const common = { format: 'json' as const, reconnectAttempts: 0 }
    const client =
      target === 'tcp'
        ? createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: server.tcpPort })
        : createClient({
            ...common,
            transport: 'websocket',
            url: target === 'memory' ? 'ws://memory/' : server.wsUrl.replace('?format=json', ''),
            ...(target === 'memory' ? { WebSocket: server.memory as unknown as WebSocketConstructor } : {}),
          })
    t.teardown(() => client.close())
    t.same(await collect(client.stream(spec('ticks.list', '/ticks'), { count: 2 })), [{ n: 1 }, { n: 2 }])
    const before = server.stopped()
    const seen: unknown[] = []
    let error: unknown
    try {
      for await (const i of client.stream(spec('ticks.forever', '/ticks/forever'), {}, { timeoutMs: 150 }))
        seen.push(i)
    } catch (err) {
      error = err
    }
    // The client's own timer and the server's deadline end it at the same moment: either message.
    t.match(error, { name: 'TimeoutException', statusCode: 504 })
    t.ok(seen.length >= 1, 'items came before the deadline')
    await until(() => server.stopped() === before + 1, 'the route stream stopped at the deadline')
    t.equal(server.stopped(), before + 1)
  })
}

/** A raw TCP REQUEST with metadata of its own (`timeout_ms`). */
async function rawTcp(port: number, metadata: Record<string, string>, endpoint: string) {
  const socket = connect(port, '127.0.0.1')
  const frames: Frame[] = []
  const reader = new TcpFrameReader({ maxFrameBytes: 1 << 20 })
  socket.on('data', (chunk) => frames.push(...reader.push(chunk)))
  await new Promise((resolve) => socket.once('connect', resolve))
  const payload = Buffer.concat([encodeMetadata({ format: 'json', ...metadata }), Buffer.from('{}')])
  socket.write(encodeTcpFrame({ type: FrameType.REQUEST, requestId: 1, endpoint, payload }))
  await until(
    () => frames.some((f) => f.type === FrameType.ERROR || f.type === FrameType.STREAM_END),
    'the end',
  )
  socket.destroy()
  const last = frames.at(-1) as Frame
  return { items: frames.filter((f) => f.type === FrameType.STREAM_ITEM).length, end: dec(last.payload) }
}

t.test(
  "the frame's deadline (timeout_ms) ends the stream with 504 and destroys the route's stream",
  async (t) => {
    const server = await appFor('direct')
    const before = server.stopped()
    const late = await rawTcp(server.tcpPort, { timeout_ms: '120' }, 'ticks.forever')
    t.ok(late.items >= 1, 'items came before the deadline')
    t.match(late.end, { statusCode: 504, code: 'TRV_TIMEOUT', message: 'Deadline of 120 ms exceeded' })
    await until(() => server.stopped() === before + 1, 'the route stream stopped at the deadline')
    t.equal(server.stopped(), before + 1)
    const invalid = await rawTcp(server.tcpPort, { timeout_ms: '0' }, 'ticks.forever')
    t.same(invalid.items, 0)
    t.match(invalid.end, {
      statusCode: 400,
      message:
        'Invalid timeout_ms metadata: must be a positive integer number of milliseconds, at most 2147483647',
    })
    t.equal(server.stopped(), before + 1, 'the route never ran')
  },
)

t.test("shutdown mid-stream: 503 in the error body, and the route's stream destroyed", async (t) => {
  const server = await streamApp('direct')
  const client = await RawClient.open('tcp-direct', server)
  t.teardown(() => client.close())
  client.write(request(1, 'ticks.forever', {}))
  await client.until((fs) => fs.some((f) => f.type === FrameType.STREAM_ITEM))
  await server.app.close()
  const ended = await streamOf(client, 1)
  t.match(ended.end, { statusCode: 503, code: 'TRV_SERVICE_UNAVAILABLE', message: 'Server is shutting down' })
  await until(() => server.stopped() === 1, 'the route stream stopped at shutdown')
  t.equal(server.stopped(), 1)
})

t.test('HTTP answers exactly as without the name', async (t) => {
  const named = await appFor('direct')
  const plain = await streamApp('direct', false)
  t.teardown(() => plain.app.close())
  for (const path of [
    '/ticks?count=3',
    '/ticks/events',
    '/ticks/bad',
    '/ticks?count=500',
    '/ticks/guarded',
  ]) {
    const [a, b] = await Promise.all([fetch(plain.http + path), fetch(named.http + path)])
    // The request id differs app to app (and so the content-length of a body carrying it); nothing else may.
    const headers = (r: Response) => {
      const kept: [string, string][] = []
      r.headers.forEach((value, name) => {
        if (name !== 'date' && name !== 'content-length') kept.push([name, value])
      })
      return kept
    }
    const body = async (r: Response) => (await r.text()).replace(/"requestId":"[^"]*"/, '')
    t.same([b.status, headers(b), await body(b)], [a.status, headers(a), await body(a)], path)
  }
  const res = await fetch(`${named.http}/ticks?count=2`)
  t.equal(res.headers.get('content-type'), 'application/x-ndjson')
  t.equal(await res.text(), '{"n":1}\n{"n":2}\n')
})

t.test('the registry describes a streaming named route as a stream of its items', async (t) => {
  const { app } = await appFor('direct')
  const definition = app.trivium.registry.get('ticks.list')
  t.equal(definition?.streaming, true)
  t.equal(definition?.response.name, 'TicksListResponse')
  t.same(definition?.response.jsonSchema, item)
})
