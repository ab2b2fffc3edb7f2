// PROTOCOL.md "Deadlines" on every transport — HTTP, WebSocket, TCP direct and inject, and the in-memory
// fourth carrier — kept apart from the table of src/cases.ts. Through @trivium/client: the endpoint's
// timeoutMs and the client's timeout (the earlier wins), call.signal aborted with the one TimeoutException,
// call.deadline, streams bounded as a whole. Raw, over real sockets: the exact 504 body and the hostile
// values (0, 2^31, 2^53, …) refused with the 400 naming the header or the metadata entry.
import { connect } from 'node:net'
import {
  createClient,
  type EndpointSpec,
  type TriviumClient,
  type WebSocketConstructor,
} from '@trivium/client/node'
import { type ConformanceServer, startConformanceServer } from '@trivium/conformance'
import { jsonSchemaModel, type TriviumCall } from '@trivium/core'
import {
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import { type MemoryWebSocket, registerMemoryTransport } from './memory-transport.ts'
import { rawApp, until } from './raw-frames.ts'

const RunId = jsonSchemaModel<{ runId: string }>('RunId', {
  type: 'object',
  properties: { runId: { type: 'string' } },
  required: ['runId'],
})
const Done = jsonSchemaModel<Record<string, never>>('Done', { type: 'object' })
const Left = jsonSchemaModel<{ left: number | null }>('Left', {
  type: 'object',
  properties: { left: { type: ['integer', 'null'] } },
})
const Tick = jsonSchemaModel<{ i: number }>('Tick', {
  type: 'object',
  properties: { i: { type: 'integer' } },
})

const spec = (
  name: string,
  url: string,
  response: EndpointSpec['response'],
  streaming = false,
): EndpointSpec => ({
  name,
  method: 'GET',
  url,
  request: RunId as EndpointSpec['request'],
  response,
  streaming,
})
const stuck = spec('deadline.stuck', '/deadline/stuck', Done)
const serverStuck = spec('deadline.serverStuck', '/deadline/server-stuck', Done)
const left = spec('deadline.left', '/deadline/left', Left)
const ticks = spec('deadline.ticks', '/deadline/ticks', Tick, true)
const serverTicks = spec('deadline.serverTicks', '/deadline/server-ticks', Tick, true)
const endpoints = { stuck, serverStuck, left, ticks, serverTicks }

const INVALID_HEADER =
  'Invalid Trivium-Timeout-Ms header: must be a positive integer number of milliseconds, at most 2147483647'
const INVALID_METADATA =
  'Invalid timeout_ms metadata: must be a positive integer number of milliseconds, at most 2147483647'
/** Not a positive integer of ms, or over the documented maximum (2^31 - 1). */
const HOSTILE = ['0', '-1', '1.5', '1e3', 'abc', '2147483648', '9007199254740992', '18446744073709551616']

interface Seen {
  deadline?: number | undefined
  reason?: { name?: string; code?: string; message?: string }
  finished?: boolean
}
const seen = new Map<string, Seen>()
let nextRun = 0
const runId = () => `run-${++nextRun}`

/** Ignores its signal until it aborts, then keeps running a little: the answer must not wait for it. */
async function stuckHandler(req: { runId: string }, call: TriviumCall<{ runId: string }>) {
  const record: Seen = { deadline: call.deadline }
  seen.set(req.runId, record)
  await new Promise((resolve) => call.signal.addEventListener('abort', resolve, { once: true }))
  record.reason = call.signal.reason
  await new Promise((r) => setTimeout(r, 50))
  return {}
}
async function* ticking(req: { runId: string }, call: TriviumCall<{ runId: string }>) {
  const record: Seen = { deadline: call.deadline }
  seen.set(req.runId, record)
  call.signal.addEventListener('abort', () => {
    record.reason = call.signal.reason
  })
  try {
    for (let i = 0; ; i++) {
      yield { i }
      await new Promise((r) => setTimeout(r, 20))
    }
  } finally {
    record.finished = true
  }
}

function addEndpoints(app: FastifyInstance): void {
  const o = { method: 'GET' as const, request: RunId, auth: 'public' as const }
  app.trivium.endpoint('deadline.stuck', { ...o, url: '/deadline/stuck', response: Done }, stuckHandler)
  app.trivium.endpoint(
    'deadline.serverStuck',
    { ...o, url: '/deadline/server-stuck', response: Done, timeoutMs: 150 },
    stuckHandler,
  )
  app.trivium.endpoint('deadline.left', { ...o, url: '/deadline/left', response: Left }, (_req, call) => ({
    left: call.deadline ?? null,
  }))
  app.trivium.stream('deadline.ticks', { ...o, url: '/deadline/ticks', response: Tick }, ticking)
  app.trivium.stream(
    'deadline.serverTicks',
    { ...o, url: '/deadline/server-ticks', response: Tick, timeoutMs: 200 },
    ticking,
  )
}

const servers = new Map<string, Promise<{ server: ConformanceServer; memory: typeof MemoryWebSocket }>>()
function serverFor(mode: 'direct' | 'inject') {
  let entry = servers.get(mode)
  if (!entry) {
    let memory!: typeof MemoryWebSocket
    entry = startConformanceServer({
      tcpMode: mode,
      register: (app) => {
        addEndpoints(app)
        memory = registerMemoryTransport(app)
      },
    }).then((server) => ({ server, memory }))
    servers.set(mode, entry)
  }
  return entry
}
t.teardown(async () => {
  for (const entry of servers.values()) await (await entry).server.close()
})

type Target = 'http' | 'websocket' | 'tcp-direct' | 'tcp-inject' | 'memory'
const TARGETS: Target[] = ['http', 'websocket', 'tcp-direct', 'tcp-inject', 'memory']

async function clientFor(t: Test, target: Target): Promise<TriviumClient> {
  const { server, memory } = await serverFor(target === 'tcp-inject' ? 'inject' : 'direct')
  const common = { endpoints, format: 'json' as const, reconnectAttempts: 0 }
  const client =
    target === 'http'
      ? createClient({ ...common, transport: 'http', url: server.httpUrl })
      : target === 'websocket'
        ? createClient({ ...common, transport: 'websocket', url: server.wsUrl })
        : target === 'memory'
          ? createClient({
              ...common,
              transport: 'websocket',
              url: 'ws://memory/',
              WebSocket: memory as unknown as WebSocketConstructor,
            })
          : createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: server.tcpPort })
  t.teardown(() => client.close())
  return client
}

/** One raw REQUEST with `timeout_ms` (frames) or `Trivium-Timeout-Ms` (HTTP); the answer's error body. */
async function rawCall(
  target: Target,
  url: string,
  endpoint: string,
  timeout: string,
  id = runId(),
): Promise<Record<string, unknown>> {
  const { server, memory } = await serverFor(target === 'tcp-inject' ? 'inject' : 'direct')
  if (target === 'http') {
    const res = await fetch(`${server.httpUrl}${url}?runId=${id}`, {
      headers: { 'trivium-timeout-ms': timeout },
    })
    const body = (await res.json()) as Record<string, unknown>
    return { status: res.status, ...body }
  }
  const model = new TextEncoder().encode(JSON.stringify({ runId: id }))
  const withMeta = (meta: Record<string, string>) => {
    const m = encodeMetadata(meta)
    const out = new Uint8Array(m.length + model.length)
    out.set(m)
    out.set(model, m.length)
    return out
  }
  const frame = (payload: Uint8Array): Frame => ({ type: FrameType.REQUEST, requestId: 1, endpoint, payload })
  const answer = (f: Frame) => {
    if (f.type !== FrameType.ERROR) throw new Error(`expected ERROR, got ${f.type}`)
    return JSON.parse(new TextDecoder().decode(f.payload)) as Record<string, unknown>
  }
  if (target === 'tcp-direct' || target === 'tcp-inject') {
    const socket = connect(server.tcpPort, '127.0.0.1')
    socket.on('error', () => {})
    const reader = new TcpFrameReader({ maxFrameBytes: 1 << 20 })
    const frames: Frame[] = []
    socket.on('data', (chunk) => frames.push(...reader.push(chunk)))
    socket.write(encodeTcpFrame(frame(withMeta({ format: 'json', timeout_ms: timeout }))))
    try {
      await until(() => frames.length > 0, 'the answer')
      return answer(frames[0] as Frame)
    } finally {
      socket.destroy()
    }
  }
  const frames: Frame[] = []
  const bytes = encodeWsFrame(frame(withMeta({ timeout_ms: timeout })))
  if (target === 'websocket') {
    const ws = new WebSocket(`${server.wsUrl}?format=json&metadata=1`)
    ws.on('message', (data: Buffer) => frames.push(decodeWsFrame(new Uint8Array(data))))
    ws.on('error', () => {})
    await new Promise((resolve) => ws.once('open', resolve))
    ws.send(bytes)
    try {
      await until(() => frames.length > 0, 'the answer')
      return answer(frames[0] as Frame)
    } finally {
      ws.terminate()
    }
  }
  const socket = new (memory as unknown as new (url: string) => MemoryWebSocket)(
    'ws://memory/?format=json&metadata=1',
  )
  socket.onmessage = (ev) => frames.push(decodeWsFrame(new Uint8Array(ev.data as ArrayBuffer)))
  await until(() => socket.readyState === 1, 'the memory connection')
  socket.send(bytes)
  try {
    await until(() => frames.length > 0, 'the answer')
    return answer(frames[0] as Frame)
  } finally {
    socket.close()
  }
}

for (const target of TARGETS) {
  t.test(target, async (t) => {
    const client = await clientFor(t, target)

    await t.test(
      "the client's timeout travels: call.signal aborts with TimeoutException at it",
      async (t) => {
        const id = runId()
        const err = await client.call(stuck, { runId: id }, { timeoutMs: 300 }).catch((e) => e)
        t.match(err, { name: 'TimeoutException', code: 'TRV_TIMEOUT' })
        // The client's own timer fires at the same moment (and, started first, usually first: the raw
        // test below shows the server's own answer); either way the handler is stopped.
        await until(() => seen.get(id)?.reason !== undefined, 'the handler signal to abort')
        const left = seen.get(id)?.deadline as number
        t.ok(left > 0 && left <= 300, `the handler saw ${left} ms left of the 300 the client sent`)
      },
    )

    await t.test(
      "the endpoint's timeoutMs is earlier: the server's error body reaches the client",
      async (t) => {
        const id = runId()
        const err = await client.call(serverStuck, { runId: id }, { timeoutMs: 20_000 }).catch((e) => e)
        t.match(err, {
          name: 'TimeoutException',
          code: 'TRV_TIMEOUT',
          statusCode: 504,
          message: 'Deadline of 150 ms exceeded',
        })
        t.match(seen.get(id)?.reason, { name: 'TimeoutException', message: 'Deadline of 150 ms exceeded' })
      },
    )

    await t.test('call.deadline: the time left, or undefined without a deadline', async (t) => {
      const bounded = (await client.call(left, { runId: runId() }, { timeoutMs: 5000 })) as { left: number }
      t.ok(bounded.left > 0 && bounded.left <= 5000, `left ${bounded.left}`)
      t.same(await client.call(left, { runId: runId() }, { timeoutMs: 0 }), { left: null })
    })

    await t.test("the deadline bounds the whole stream (the client's timeout)", async (t) => {
      const id = runId()
      const items: number[] = []
      const err = await (async () => {
        for await (const tick of client.stream(ticks, { runId: id }, { timeoutMs: 300 }))
          items.push((tick as { i: number }).i)
      })().catch((e) => e)
      t.match(err, { name: 'TimeoutException', code: 'TRV_TIMEOUT' })
      t.ok(items.length >= 1 && items[0] === 0, `${items.length} items before the deadline`)
      const left = seen.get(id)?.deadline as number
      t.ok(left > 0 && left <= 300, `the stream's handler saw ${left} ms left`)
      await until(() => seen.get(id)?.finished === true, "the generator's finally")
    })

    await t.test(
      "the deadline bounds the whole stream (the endpoint's timeoutMs): the server's error",
      async (t) => {
        const id = runId()
        const items: number[] = []
        const err = await (async () => {
          for await (const tick of client.stream(serverTicks, { runId: id }))
            items.push((tick as { i: number }).i)
        })().catch((e) => e)
        t.match(err, {
          name: 'TimeoutException',
          code: 'TRV_TIMEOUT',
          message: 'Deadline of 200 ms exceeded',
        })
        t.same(items.slice(0, 2), [0, 1].slice(0, Math.min(2, items.length)), 'items in order')
        t.ok(items.length >= 1, `${items.length} items`)
        await until(() => seen.get(id)?.finished === true, "the generator's finally")
      },
    )

    await t.test('raw: the 504 body, the same on every transport', async (t) => {
      const id = runId()
      const body = await rawCall(target, '/deadline/stuck', 'deadline.stuck', '200', id)
      t.same(
        { ...body, requestId: undefined, status: undefined },
        {
          statusCode: 504,
          code: 'TRV_TIMEOUT',
          error: 'TimeoutException',
          message: 'Deadline of 200 ms exceeded',
          requestId: undefined,
          status: undefined,
        },
      )
      t.type(body.requestId, 'string')
      t.match(seen.get(id)?.reason, { name: 'TimeoutException', message: 'Deadline of 200 ms exceeded' })
      if (target === 'http') t.equal(body.status, 504)
    })

    await t.test(
      'hostile timeouts (0, 2^31, 2^53, …) are a 400 naming the header or the metadata',
      async (t) => {
        for (const value of HOSTILE) {
          const body = await rawCall(target, '/deadline/left', 'deadline.left', value)
          t.match(
            body,
            {
              statusCode: 400,
              code: 'TRV_VALIDATION',
              error: 'ValidationException',
              message: target === 'http' ? INVALID_HEADER : INVALID_METADATA,
            },
            value,
          )
        }
      },
    )
  })
}

for (const mode of ['direct', 'inject'] as const) {
  t.test(
    `TCP ${mode}: a call answered at its deadline counts toward maxInFlight until its handler returns`,
    async (t) => {
      let release!: () => void
      let returned = false
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      const server = await rawApp({
        tcp: { maxInFlight: 1, mode },
        setup: (app) => {
          // Ignores its signal: runs on after the deadline's answer until the test releases it.
          app.trivium.endpoint('held', { method: 'GET', url: '/held' }, async () => {
            await held
            returned = true
            return {}
          })
        },
      })
      t.teardown(() => server.app.close())
      const socket = connect(server.tcpPort, '127.0.0.1')
      socket.on('error', () => {})
      t.teardown(() => socket.destroy())
      const reader = new TcpFrameReader({ maxFrameBytes: 1 << 20 })
      const frames: Frame[] = []
      socket.on('data', (chunk) => frames.push(...reader.push(chunk)))
      const send = (id: number, endpoint: string, meta: Record<string, string>) =>
        socket.write(
          encodeTcpFrame({
            type: FrameType.REQUEST,
            requestId: id,
            endpoint,
            payload: encodeMetadata({ format: 'json', ...meta }),
          }),
        )
      const body = (id: number) => {
        const f = frames.find((x) => x.requestId === id) as Frame
        return { type: f.type, ...JSON.parse(new TextDecoder().decode(f.payload)) }
      }
      send(1, 'held', { timeout_ms: '50' })
      await until(() => frames.some((f) => f.requestId === 1), 'the deadline answer')
      t.match(body(1), { type: FrameType.ERROR, code: 'TRV_TIMEOUT', message: 'Deadline of 50 ms exceeded' })
      send(2, 'echo', {})
      await until(() => frames.some((f) => f.requestId === 2), 'the second answer')
      t.match(body(2), {
        type: FrameType.ERROR,
        code: 'TRV_RATE_LIMITED',
        message: 'Too many requests in flight on this connection (limit 1)',
      })
      release()
      await until(() => returned, 'the held handler to return')
      // The slot is free again once the handler returned (the first call's id was free at once: reused here).
      send(1, 'echo', {})
      await until(() => frames.some((f) => f.requestId === 1 && f.type === FrameType.RESPONSE), 'admission')
      t.pass('admitted after the handler returned')
    },
  )
}
