import {
  createClient,
  ForbiddenException,
  InternalErrorException,
  NetworkException,
  NotFoundException,
  RateLimitExceededException,
  TimeoutException,
  TokenExpiredException,
  type TriviumError,
  UnauthorizedException,
  ValidationException,
} from '@trivium/client'
import t from 'tap'
import { endpoints, startServer } from './fixture.js'

const { app, url, probe } = await startServer()
t.teardown(() => app.close())

function client(extra: Record<string, unknown> = {}) {
  const c = createClient({ transport: 'http', url, endpoints, ...extra })
  t.teardown(() => c.close())
  return c
}

t.test('binary round trip, path + body mapping, 201', async (t) => {
  const c = client()
  t.same(await c.call('echo', { text: 'héllo' }), { text: 'héllo' })
  t.same(await c.call('createTask', { list: 'inbox', title: 'write tests' }), {
    id: 7,
    list: 'inbox',
    title: 'write tests',
  })
  // calling by wire name works as well as by table key
  t.same(await c.call('tasks.create', { list: 'work', title: 'x' }), { id: 7, list: 'work', title: 'x' })
})

t.test('json format: path + query mapping with coercion', async (t) => {
  const c = client({ format: 'json' })
  t.same(await c.call('getTask', { id: 3, verbose: true }), {
    id: 3,
    list: 'inbox',
    title: 'task 3',
    verbose: true,
  })
  t.same(await c.call('echo', { text: 'json' }), { text: 'json' })
})

t.test('every error kind is rebuilt with its exact message', async (t) => {
  const c = client()
  const cases: Array<[string, new (...a: any[]) => TriviumError, string, number]> = [
    ['unauthorized', UnauthorizedException, 'Authentication required', 401],
    ['expired', TokenExpiredException, 'Token has expired', 401],
    ['forbidden', ForbiddenException, 'Insufficient permissions. Required: tasks:write', 403],
    ['validation', ValidationException, 'Invalid Task: title must NOT have fewer than 1 characters', 400],
    ['ratelimit', RateLimitExceededException, 'Rate limit exceeded. Try again in 12 seconds', 429],
    ['notfound', NotFoundException, 'Task 9 not found', 404],
    ['other', InternalErrorException, 'Internal server error', 500],
  ]
  for (const [kind, Cls, message, status] of cases) {
    const err = await c.call('fail', { kind }).then(
      () => null,
      (e) => e,
    )
    t.ok(err instanceof Cls, `${kind} → ${Cls.name}`)
    t.equal(err.message, message)
    t.equal(err.statusCode, status)
    t.equal(err.name, Cls.name)
    t.type(err.requestId, 'string')
    if (kind === 'validation') {
      t.same(err.details, [{ field: 'title', message: 'must NOT have fewer than 1 characters' }])
    }
    if (kind === 'ratelimit') t.equal(err.retryAfter, 12)
  }
  // the server's own validation of a bad body, in binary
  const err = await c.call('createTask', { list: 'inbox', title: '' }).catch((e) => e)
  t.ok(err instanceof ValidationException)
  t.equal(err.message, 'Invalid CreateTask: title must NOT have fewer than 1 characters')
  t.same(err.details, [{ field: 'title', message: 'must NOT have fewer than 1 characters' }])
})

t.test('unknown route → NotFoundException; unknown endpoint → NotFoundException locally', async (t) => {
  const c = client()
  const spec = { ...endpoints.slow, name: 'nope', url: '/nope' }
  // Core as a guest leaves unknown routes to Fastify's 404 body: still a NotFoundException here.
  await t.rejects(c.call(spec, {}), { name: 'NotFoundException', message: 'HTTP 404 Not Found' })
  await t.rejects(c.call('missing', {}), {
    name: 'NotFoundException',
    message: "Endpoint missing is not in the client's endpoint table",
  })
  await t.rejects(c.call('count', { from: 1, to: 2 }), {
    message: 'Endpoint count is a streaming endpoint: use stream()',
  })
})

t.test('a missing path parameter is a local ValidationException', async (t) => {
  const c = client()
  const err = await c.call('getTask', {}).catch((e) => e)
  t.ok(err instanceof ValidationException)
  t.equal(err.message, 'Invalid request: id is required')
})

t.test('timeout → TimeoutException, and the server sees the request go away', async (t) => {
  const c = client()
  const aborted = probe.nextSlowAbort()
  const err = await c.call('slow', {}, { timeoutMs: 50 }).catch((e) => e)
  t.ok(err instanceof TimeoutException)
  // The deadline travels with the call (Trivium-Timeout-Ms): the client's timer or the server's 504 first.
  t.match(err.message, /^(?:Call to slow timed out after 50 ms|Deadline of \d+ ms exceeded)$/)
  t.equal(err.code, 'TRV_TIMEOUT')
  await aborted
  t.pass('server handler aborted')
})

t.test('client-wide timeoutMs applies', async (t) => {
  const c = client({ timeoutMs: 30 })
  await t.rejects(c.call('slow', {}), {
    name: 'TimeoutException',
    message: 'Call to slow timed out after 30 ms',
  })
})

t.test('abort signal rejects with its reason', async (t) => {
  const c = client()
  const controller = new AbortController()
  const p = c.call('slow', {}, { signal: controller.signal })
  const reason = new Error('user left')
  setTimeout(() => controller.abort(reason), 20)
  await t.rejects(p, reason)
  const pre = new AbortController()
  pre.abort(new Error('already'))
  await t.rejects(c.call('echo', { text: 'x' }, { signal: pre.signal }), { message: 'already' })
})

t.test('connection refused → NetworkException', async (t) => {
  const c = createClient({ transport: 'http', url: 'http://127.0.0.1:1', endpoints })
  const err = await c.call('echo', { text: 'x' }).catch((e) => e)
  t.ok(err instanceof NetworkException)
  t.match(err.message, /^Network error: /)
  await c.close()
  await t.rejects(c.call('echo', { text: 'x' }), { name: 'NetworkException', message: 'Client closed' })
})

t.test('token provider, refresh and one retry on TokenExpiredException', async (t) => {
  const noToken = client()
  await t.rejects(noToken.call('secure', {}), {
    name: 'UnauthorizedException',
    message: 'Authentication required',
  })

  let refreshes = 0
  const c = client({
    token: async () => 'old',
    refresh: async () => {
      refreshes++
      return 'fresh'
    },
  })
  probe.tokensSeen.length = 0
  t.same(await c.call('secure', {}), { user: 'alice' })
  t.same(probe.tokensSeen, ['old', 'fresh'])
  t.equal(refreshes, 1)
  t.same(await c.call('secure', {}), { user: 'alice' }, 'the refreshed token is kept')
  t.equal(refreshes, 1)

  // a refresh that does not help: the second failure is returned, no loop
  const stuck = client({ token: 'old', refresh: async () => 'old' })
  await t.rejects(stuck.call('secure', {}), { name: 'TokenExpiredException', message: 'Token has expired' })
  // without refresh: the error as is
  await t.rejects(client({ token: 'old' }).call('secure', {}), TokenExpiredException)
})

t.test('SSE stream: items in order, then end', async (t) => {
  const c = client()
  const got: number[] = []
  for await (const item of c.stream('count', { from: 1, to: 5 })) got.push(item.n)
  t.same(got, [1, 2, 3, 4, 5])
})

t.test('SSE stream: error event → typed error after the items before it', async (t) => {
  const c = client()
  const got: number[] = []
  const err = await (async () => {
    for await (const item of c.stream('count', { from: 1, to: 5, failAt: 3 })) got.push(item.n)
  })().catch((e) => e)
  t.same(got, [1, 2])
  t.ok(err instanceof ForbiddenException)
  t.equal(err.message, 'Insufficient roles. Required: admin')
})

t.test('SSE stream: break cancels the stream on the server', async (t) => {
  const c = client()
  const got: number[] = []
  for await (const item of c.stream('count', { from: 1000, to: 100000 })) {
    got.push(item.n)
    if (got.length === 3) break
  }
  t.same(got, [1000, 1001, 1002])
  await probe.streamStopped(1000)
  t.pass('the generator finally ran on the server')
})

t.test('SSE stream: error status before the stream starts', async (t) => {
  const c = client()
  const err = await (async () => {
    for await (const _ of c.stream('count', { from: 'x', to: 1 } as never)) t.fail('no item expected')
  })().catch((e) => e)
  t.ok(err instanceof ValidationException)
  t.equal(err.message, 'Invalid CountRequest: from must be integer')
})

t.test('options are validated', async (t) => {
  t.throws(() => createClient({ transport: 'http', url: 'ftp://x', endpoints }), {
    message: '@trivium/client: url must be an http:// or https:// URL',
  })
  t.throws(() => createClient({ transport: 'http', url, timeoutMs: -1 }), {
    message: '@trivium/client: timeoutMs must be a number >= 0',
  })
  t.throws(() => createClient({ transport: 'nope' } as never), {
    message: '@trivium/client: unknown transport "nope"',
  })
})

t.test('node entry: undici pool options', async (t) => {
  const { createClient: createNodeClient } = await import('@trivium/client/node')
  const c = createNodeClient({
    transport: 'http',
    url,
    endpoints,
    poolSize: 1,
    keepAliveTimeoutMs: 1000,
    maxRequestsPerConnection: 2,
  })
  t.teardown(() => c.close())
  const results = await Promise.all([1, 2, 3, 4].map((i) => c.call('echo', { text: `p${i}` })))
  t.same(
    results.map((r) => r.text),
    ['p1', 'p2', 'p3', 'p4'],
  )
  const items: number[] = []
  for await (const item of c.stream('count', { from: 1, to: 3 })) items.push(item.n)
  t.same(items, [1, 2, 3])
  await t.rejects(c.call('fail', { kind: 'notfound' }), {
    name: 'NotFoundException',
    message: 'Task 9 not found',
  })
  await t.rejects(c.call('slow', {}, { timeoutMs: 20 }), { name: 'TimeoutException' })
  await c.close()
  await t.rejects(c.call('echo', { text: 'x' }), { name: 'NetworkException', message: 'Client closed' })
})
