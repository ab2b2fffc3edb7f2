// PROTOCOL.md "Deadlines", issue 44 items 6–8, raw over real sockets on HTTP, WebSocket, TCP direct and
// TCP inject:
// - a handler that keeps the thread busy past its deadline (no timer can run) is answered 504, never its
//   late result — async or synchronous;
// - a `first` middleware (an observer: access log, metrics) sees the 504 the client got;
// - an idempotent create answered 504 while its handler runs on keeps its key: a retry meanwhile gets
//   409, and once the handler has written, the retry gets its committed answer — one write, never two.
import { type ConformanceServer, startConformanceServer } from '@trivium/conformance'
import { idempotency, jsonSchemaModel, MemoryIdempotencyStore } from '@trivium/core'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type RawAnswer, type RawMeta, rawCall } from './raw-call.ts'
import { until } from './raw-frames.ts'

const Busy = jsonSchemaModel<{ runId: string; spinMs: number }>('Busy', {
  type: 'object',
  properties: { runId: { type: 'string' }, spinMs: { type: 'integer' } },
  required: ['runId', 'spinMs'],
})
const Run = jsonSchemaModel<{ runId: string }>('Run', {
  type: 'object',
  properties: { runId: { type: 'string' } },
  required: ['runId'],
})
const Written = jsonSchemaModel<{ runId: string; n: number }>('Written', {
  type: 'object',
  properties: { runId: { type: 'string' }, n: { type: 'integer' } },
})

/** Keeps this thread busy: no timer, no I/O runs meanwhile (as a handler on the embedded PGlite). */
function spin(ms: number): void {
  const end = performance.now() + ms
  while (performance.now() < end) {
    /* busy */
  }
}

/** What the observer saw, per runId: the code of the answer its `next()` settled with. */
const observed = new Map<string, string>()
/** Writes per runId of the `late.held` handler; gates it waits on. */
const writes = new Map<string, number>()
const gates = new Map<string, () => void>()

function setup(app: FastifyInstance): void {
  app.trivium.use(
    (call, next) => {
      const runId = (call.body as { runId?: string } | undefined)?.runId
      const record = (code: string) => {
        if (runId !== undefined) observed.set(runId, code)
      }
      return next().then(
        (value) => {
          record('OK')
          return value
        },
        (err: { code?: string }) => {
          record(err.code ?? 'TRV_INTERNAL')
          throw err
        },
      )
    },
    { name: 'observer', first: true },
  )
  app.trivium.use(idempotency({ store: new MemoryIdempotencyStore() }), {
    name: 'idempotency',
    after: ['auth'],
  })
  const o = { method: 'POST' as const, auth: 'public' as const }
  app.trivium.endpoint(
    'late.busy',
    { ...o, url: '/late/busy', request: Busy, response: Run },
    async (req) => {
      await Promise.resolve()
      spin(req.spinMs)
      return { runId: req.runId }
    },
  )
  app.trivium.endpoint(
    'late.busySync',
    { ...o, url: '/late/busy-sync', request: Busy, response: Run },
    (req) => {
      spin(req.spinMs)
      return { runId: req.runId }
    },
  )
  app.trivium.endpoint(
    'late.held',
    { ...o, url: '/late/held', request: Run, response: Written, status: 201, idempotencyKey: true },
    // Ignores call.signal: it writes once the test opens its gate, long after its 504.
    async (req) => {
      await new Promise<void>((open) => gates.set(req.runId, open))
      const n = (writes.get(req.runId) ?? 0) + 1
      writes.set(req.runId, n)
      return { runId: req.runId, n }
    },
  )
}

const servers = new Map<string, Promise<ConformanceServer>>()
function serverFor(mode: 'direct' | 'inject'): Promise<ConformanceServer> {
  let server = servers.get(mode)
  if (!server) {
    server = startConformanceServer({ tcpMode: mode, register: setup })
    servers.set(mode, server)
  }
  return server
}
t.teardown(async () => {
  for (const server of servers.values()) await (await server).close()
})

type Target = 'http' | 'websocket' | 'tcp-direct' | 'tcp-inject'
const TARGETS: Target[] = ['http', 'websocket', 'tcp-direct', 'tcp-inject']

async function call(
  target: Target,
  endpoint: string,
  url: string,
  body: unknown,
  meta: RawMeta,
): Promise<RawAnswer> {
  const server = await serverFor(target === 'tcp-inject' ? 'inject' : 'direct')
  const transport = target === 'tcp-direct' || target === 'tcp-inject' ? 'tcp' : target
  return rawCall({ ...server, transport }, endpoint, 'POST', url, JSON.stringify(body), meta)
}

const timeoutBody = (ms: number) => ({
  statusCode: 504,
  code: 'TRV_TIMEOUT',
  error: 'TimeoutException',
  message: `Deadline of ${ms} ms exceeded`,
})

let next = 0
const runId = (what: string) => `${what}-${++next}`

for (const target of TARGETS) {
  t.test(target, async (t) => {
    await t.test('a handler busy past its deadline (no timer could run) is answered 504', async (t) => {
      for (const [endpoint, url] of [
        ['late.busy', '/late/busy'],
        ['late.busySync', '/late/busy-sync'],
      ] as const) {
        const id = runId(endpoint)
        const res = await call(target, endpoint, url, { runId: id, spinMs: 60 }, { timeout: '5' })
        t.equal(res.status, 504, `${endpoint}: never its late result`)
        t.match(res.body, timeoutBody(5), endpoint)
        t.equal(observed.get(id), 'TRV_TIMEOUT', `${endpoint}: the observer saw the 504 the client got`)
        // In time, the same handler is answered (the check costs nothing when the deadline holds).
        const quick = runId(endpoint)
        const ok = await call(target, endpoint, url, { runId: quick, spinMs: 0 }, { timeout: '60000' })
        t.same(ok.body, { runId: quick }, `${endpoint}: in time, its result`)
        t.equal(observed.get(quick), 'OK')
      }
    })

    await t.test(
      'an idempotent create answered 504 keeps its key until its handler settles: 409, then its answer',
      async (t) => {
        const id = runId('held')
        const key = `key-${id}`
        const late = await call(target, 'late.held', '/late/held', { runId: id }, { timeout: '50', key })
        t.equal(late.status, 504)
        t.match(late.body, timeoutBody(50))
        t.equal(observed.get(id), 'TRV_TIMEOUT', 'the observer saw the 504')
        // The handler still runs (held at its gate): the key is not released.
        const meanwhile = await call(target, 'late.held', '/late/held', { runId: id }, { key })
        t.equal(meanwhile.status, 409)
        t.match(meanwhile.body, {
          statusCode: 409,
          code: 'TRV_CONFLICT',
          error: 'ConflictException',
          message: 'A request with this Idempotency-Key is still being processed: retry after it finishes',
        })
        await until(() => gates.has(id), 'the first handler at its gate')
        gates.get(id)?.()
        await until(() => writes.get(id) === 1, 'the first handler to write')
        // Its answer is recorded right after it returned (409 until then): the retry gets it, not a new write.
        let replay: RawAnswer | undefined
        for (let i = 0; i < 200; i++) {
          replay = await call(target, 'late.held', '/late/held', { runId: id }, { key })
          if (replay.status !== 409) break
        }
        t.equal(replay?.status, target === 'http' ? 201 : 'ok', 'the committed answer')
        t.same(replay?.body, { runId: id, n: 1 })
        t.equal(writes.get(id), 1, 'one write, never a duplicate')
      },
    )
  })
}
