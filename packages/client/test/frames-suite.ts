// The same behaviours, run against the real @trivium/websocket and @trivium/tcp servers.
import {
  type ConnectionState,
  createClient,
  ForbiddenException,
  InternalErrorException,
  NetworkException,
  NotFoundException,
  RateLimitExceededException,
  ServiceUnavailableException,
  TimeoutException,
  TokenExpiredException,
  type TriviumClient,
  type TriviumError,
  UnauthorizedException,
  ValidationException,
} from '@trivium/client/node'
import t from 'tap'
import { endpoints, startServer, type TestServer } from './fixture.js'

type Transport = 'websocket' | 'tcp'

function open(transport: Transport, server: TestServer, extra: Record<string, unknown> = {}): TriviumClient {
  const base = { endpoints, reconnectDelayMs: 20, reconnectMaxDelayMs: 200, ...extra }
  const c =
    transport === 'websocket'
      ? createClient({ transport, url: server.wsUrl, ...base })
      : createClient({ transport, host: '127.0.0.1', port: server.tcpPort, ...base })
  t.teardown(() => c.close())
  return c
}

async function collect<T>(it: AsyncIterable<T>): Promise<{ items: T[]; error: unknown }> {
  const items: T[] = []
  try {
    for await (const item of it) items.push(item)
    return { items, error: undefined }
  } catch (error) {
    return { items, error }
  }
}

export async function frameSuite(transport: Transport): Promise<void> {
  const server = await startServer({ frames: true })
  t.teardown(() => server.app.close())
  const { probe } = server

  t.test('calls: binary, path fields, many in flight', async (t) => {
    const c = open(transport, server)
    t.equal(c.state, 'idle')
    t.same(await c.call('echo', { text: 'héllo' }), { text: 'héllo' })
    t.equal(c.state, 'connected')
    t.same(await c.call('createTask', { list: 'inbox', title: 'x' }), { id: 7, list: 'inbox', title: 'x' })
    const many = await Promise.all(Array.from({ length: 30 }, (_, i) => c.call('echo', { text: `m${i}` })))
    t.same(
      many.map((r) => r.text),
      Array.from({ length: 30 }, (_, i) => `m${i}`),
    )
    // a JSON-only request model (GetTask has no binary form) still works
    t.same(await c.call('getTask', { id: 4 }), { id: 4, list: 'inbox', title: 'task 4' })
  })

  t.test('json format', async (t) => {
    const c = open(transport, server, { format: 'json' })
    t.same(await c.call('echo', { text: 'json' }), { text: 'json' })
    t.same(await c.call('getTask', { id: 5, verbose: false }), {
      id: 5,
      list: 'inbox',
      title: 'task 5',
      verbose: false,
    })
  })

  t.test('every error kind is rebuilt from the ERROR frame', async (t) => {
    const c = open(transport, server)
    const cases: Array<[string, new (...a: any[]) => TriviumError, string]> = [
      ['unauthorized', UnauthorizedException, 'Authentication required'],
      ['expired', TokenExpiredException, 'Token has expired'],
      ['forbidden', ForbiddenException, 'Insufficient permissions. Required: tasks:write'],
      ['validation', ValidationException, 'Invalid Task: title must NOT have fewer than 1 characters'],
      ['ratelimit', RateLimitExceededException, 'Rate limit exceeded. Try again in 12 seconds'],
      ['notfound', NotFoundException, 'Task 9 not found'],
      ['other', InternalErrorException, 'Internal server error'],
    ]
    for (const [kind, Cls, message] of cases) {
      const err = await c.call('fail', { kind }).catch((e) => e)
      t.ok(err instanceof Cls, `${kind} → ${Cls.name}`)
      t.equal(err.message, message)
      t.match(err.requestId, /^.+:\d+$/)
      if (kind === 'validation')
        t.same(err.details, [{ field: 'title', message: 'must NOT have fewer than 1 characters' }])
      if (kind === 'ratelimit') t.equal(err.retryAfter, 12)
    }
    await t.rejects(c.call({ ...endpoints.slow, name: 'nope' }, {}), {
      name: 'NotFoundException',
      message: 'Unknown endpoint: nope',
    })
  })

  t.test('a call timing out → TimeoutException, CANCEL stops the handler', async (t) => {
    const c = open(transport, server)
    // Connected first: a timeout that fires while the client still connects (a loaded machine) sends no
    // REQUEST, so there would be no handler to cancel and `aborted` would wait forever.
    t.same(await c.call('echo', { text: 'connected' }), { text: 'connected' })
    const aborted = probe.nextSlowAbort()
    const err = await c.call('slow', {}, { timeoutMs: 50 }).catch((e) => e)
    t.ok(err instanceof TimeoutException)
    // The client sends its deadline with the call (`timeout_ms`, what is left of the 50 ms): the client's
    // timer or the server's deadline answers first, both a TimeoutException, each with its exact message.
    t.match(err.message, /^(?:Call to slow timed out after 50 ms|Deadline of \d+ ms exceeded)$/)
    await aborted
    t.pass('the server handler saw the cancellation')
    t.same(await c.call('echo', { text: 'still fine' }), { text: 'still fine' })
  })

  t.test('abort signal', async (t) => {
    const c = open(transport, server)
    const controller = new AbortController()
    const aborted = probe.nextSlowAbort()
    const started = probe.nextSlowStart()
    const p = c.call('slow', {}, { signal: controller.signal })
    // Aborted once the server runs it: an abort before the REQUEST is sent (a slow connect on a loaded
    // machine) sends nothing, so the handler would never see a CANCEL and `aborted` would wait forever.
    await started
    controller.abort(new Error('stop'))
    await t.rejects(p, { message: 'stop' })
    await aborted
  })

  t.test('streams: items, end, error, break cancels on the server', async (t) => {
    const c = open(transport, server)
    const all = await collect(c.stream('count', { from: 1, to: 4 }))
    t.same(
      all.items.map((i) => i.n),
      [1, 2, 3, 4],
    )
    t.equal(all.error, undefined)
    const failed = await collect(c.stream('count', { from: 1, to: 5, failAt: 3 }))
    t.same(
      failed.items.map((i) => i.n),
      [1, 2],
    )
    t.ok(failed.error instanceof ForbiddenException)
    t.equal((failed.error as Error).message, 'Insufficient roles. Required: admin')
    const got: number[] = []
    for await (const item of c.stream('count', { from: 2000, to: 1_000_000 })) {
      got.push(item.n)
      if (got.length === 3) break
    }
    t.same(got, [2000, 2001, 2002])
    await probe.streamStopped(2000)
    t.pass('the generator finally ran on the server')
  })

  t.test('server push: subscribe, receive, unsubscribe', async (t) => {
    const c = open(transport, server)
    const got: unknown[] = []
    let resolveFirst!: () => void
    const first = new Promise<void>((r) => {
      resolveFirst = r
    })
    const off = await c.onPush('news', (m) => {
      got.push(m)
      resolveFirst()
    })
    await server.app.push.toTopic('news', { headline: 'hello' })
    await first
    t.same(got, [{ headline: 'hello' }])
    await off()
    await server.app.push.toTopic('news', { headline: 'unseen' })
    // a round trip after the push: had it been delivered, it would have arrived before this response
    await c.call('echo', { text: 'sync' })
    t.same(got, [{ headline: 'hello' }])
  })

  t.test('token provider, refresh and one retry', async (t) => {
    let refreshes = 0
    const c = open(transport, server, {
      token: 'old',
      refresh: async () => {
        refreshes++
        return 'fresh'
      },
    })
    probe.tokensSeen.length = 0
    t.same(await c.call('secure', {}), { user: 'alice' })
    t.same(probe.tokensSeen, ['old', 'fresh'])
    t.equal(refreshes, 1)
    const anon = open(transport, server)
    await t.rejects(anon.call('secure', {}), {
      name: 'UnauthorizedException',
      message: 'Authentication required',
    })
  })

  t.test('connection refused → NetworkException, nothing hangs', async (t) => {
    const dead = { ...server, wsUrl: 'ws://127.0.0.1:1/ws', tcpPort: 1 }
    const c = open(transport, dead)
    const err = await c.call('echo', { text: 'x' }).catch((e) => e)
    t.ok(err instanceof NetworkException)
    t.match(err.message, /^Cannot connect to /)
    t.equal(c.state, 'idle')
    await c.close()
    t.equal(c.state, 'closed')
    await t.rejects(c.call('echo', { text: 'x' }), { name: 'NetworkException', message: 'Client closed' })
  })

  t.test('close() fails calls in flight with NetworkException', async (t) => {
    const c = open(transport, server)
    await c.connect()
    const p = c.call('slow', {}).catch((e) => e)
    const s = collect(c.stream('count', { from: 3000, to: 1_000_000 }))
    await new Promise((r) => setTimeout(r, 30))
    await c.close()
    const err = await p
    t.ok(err instanceof NetworkException)
    t.equal(err.message, 'Client closed')
    const r = await s
    t.ok(r.error instanceof NetworkException)
    t.equal((r.error as Error).message, 'Client closed')
  })

  t.test(
    'server restart: in-flight calls fail, the client reconnects, resumable streams resume',
    async (t) => {
      const first = await startServer({ frames: true })
      // reconnect attempts land after the old server has finished closing
      const c = open(transport, first, { reconnectDelayMs: 300, reconnectJitter: 0 })
      const states: ConnectionState[] = []
      c.on('stateChange', (s) => states.push(s))
      const events: string[] = []
      c.onConnected(({ reconnected }) => events.push(reconnected ? 'reconnected' : 'connected'))
      c.onDisconnected(({ willReconnect }) => events.push(`disconnected:${willReconnect}`))
      await c.connect()

      const inFlight = c.call('slow', {})
      inFlight.catch(() => {})
      // a stream that can resume (count has `resume`), and one that cannot
      const plain = { ...endpoints.count, resume: undefined }
      const plainStream = collect(c.stream(plain, { from: 1, to: 1_000_000 }))
      const resumed: number[] = []
      let restarted!: () => void
      const restartedP = new Promise<void>((r) => {
        restarted = r
      })
      let second: TestServer | undefined
      const resumable = (async () => {
        for await (const item of c.stream('count', { from: 1, to: 1_000_000 })) {
          resumed.push(item.n)
          if (resumed.length === 3) {
            // restart the server under the stream
            await first.app.close()
            second = await startServer({ frames: true, port: first.port, tcpPort: first.tcpPort })
            restarted()
          }
          if (resumed.length === 10) break
        }
      })()
      await restartedP
      t.teardown(() => second?.app.close())

      const err = await inFlight.catch((e) => e)
      t.ok(err instanceof NetworkException, 'the in-flight call failed with NetworkException')
      t.match(err.message, /^Connection lost: /)
      const p = await plainStream
      t.ok(
        p.error instanceof ServiceUnavailableException || p.error instanceof NetworkException,
        'a stream without resume ends with a clear error',
      )
      await resumable
      t.same(
        resumed,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        'resumed after the last item seen, no gap, no duplicate',
      )
      t.same(await c.call('echo', { text: 'after restart' }), { text: 'after restart' })
      t.equal(c.state, 'connected')
      t.same(events.slice(0, 1), ['connected'])
      t.ok(events.includes('reconnected'), `events: ${events.join(',')}`)
      t.ok(states.includes('reconnecting'), `states: ${states.join(',')}`)
    },
  )

  t.test(
    'server gone for good: in-flight call fails, reconnect gives up, next call reports it',
    async (t) => {
      const gone = await startServer({ frames: true })
      const c = open(transport, gone, { reconnectAttempts: 2, reconnectDelayMs: 300, reconnectJitter: 0 })
      const errors: TriviumError[] = []
      c.onError((e) => errors.push(e))
      await c.connect()
      const p = c.call('slow', {}).catch((e) => e)
      await new Promise((r) => setTimeout(r, 20))
      await gone.app.close()
      const err = await p
      t.ok(err instanceof NetworkException)
      const next = await c.call('echo', { text: 'x' }).catch((e) => e)
      t.ok(next instanceof NetworkException)
      t.ok(errors.length >= 2, 'each failed attempt was reported with onError')
      t.ok(errors.every((e) => e instanceof NetworkException))
    },
  )
}
