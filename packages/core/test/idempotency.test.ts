// idempotency(): the rules of PROTOCOL.md "Idempotency keys" with the one-process store, over a real
// HTTP socket and over trivium.invoke (the frame transports' entry, key in metadata). The SQL store and
// every transport are exercised by apps/demo/test/idempotency.test.ts.
import trivium, {
  type IdempotencyScope,
  idempotency,
  MemoryIdempotencyStore,
  ValidationException,
} from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

async function app(store = new MemoryIdempotencyStore()) {
  const fastify = Fastify()
  await fastify.register(trivium)
  let runs = 0
  const release = { wait: Promise.resolve(), open: () => {} }
  fastify.trivium.use(
    (call, next) => {
      call.identity = {
        userId: String(call.headers['x-user'] ?? call.metadata.user ?? 'u1'),
        roles: [],
        permissions: [],
      }
      return next()
    },
    { name: 'auth' },
  )
  fastify.trivium.use(idempotency({ store }), { name: 'idempotency', after: ['auth'] })
  fastify.trivium.endpoint(
    'things.create',
    { method: 'POST', url: '/things', status: 201, idempotencyKey: true },
    async (req: { name: string; fail?: boolean }) => {
      await release.wait
      if (req.fail) throw new ValidationException('failed on purpose')
      return { id: ++runs, name: req.name }
    },
  )
  fastify.trivium.endpoint('plain.create', { method: 'POST', url: '/plain', status: 201 }, async () => ({
    id: ++runs,
  }))
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  const { port } = fastify.server.address() as { port: number }
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })
    return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() }
  }
  return {
    fastify,
    post,
    hold() {
      release.wait = new Promise<void>((resolve) => {
        release.open = resolve
      })
    },
    go: () => release.open(),
    runs: () => runs,
  }
}

t.test('HTTP: replay, 422 for another body, 409 while running, errors release the key', async (t) => {
  const a = await app()
  t.teardown(() => a.fastify.close())
  const first = await a.post('/things', { name: 'a', note: 'n' }, { 'idempotency-key': 'k1' })
  t.same(first, { status: 201, replayed: null, body: { id: 1, name: 'a' } })
  // Same body in another key order: the same request.
  t.same(await a.post('/things', { note: 'n', name: 'a' }, { 'idempotency-key': 'k1' }), {
    status: 201,
    replayed: 'true',
    body: { id: 1, name: 'a' },
  })
  t.match(await a.post('/things', { name: 'b' }, { 'idempotency-key': 'k1' }), {
    status: 422,
    body: {
      code: 'TRV_UNPROCESSABLE_CONTENT',
      message: 'This Idempotency-Key was used with a different request body: use a new key for a new request',
    },
  })
  t.equal(a.runs(), 1, 'ran once')
  // Per user.
  t.same((await a.post('/things', { name: 'a' }, { 'idempotency-key': 'k1', 'x-user': 'u2' })).body, {
    id: 2,
    name: 'a',
  })
  // An endpoint that does not opt in ignores the key.
  await a.post('/plain', {}, { 'idempotency-key': 'k1' })
  await a.post('/plain', {}, { 'idempotency-key': 'k1' })
  t.equal(a.runs(), 4)

  a.hold()
  const running = a.post('/things', { name: 'slow' }, { 'idempotency-key': 'k2' })
  await t.resolveMatch(
    (async () => {
      for (;;) {
        const res = await a.post('/things', { name: 'slow' }, { 'idempotency-key': 'k2' })
        if (res.status === 409) return res
      }
    })(),
    {
      status: 409,
      body: {
        code: 'TRV_CONFLICT',
        error: 'ConflictException',
        message: 'A request with this Idempotency-Key is still being processed: retry after it finishes',
      },
    },
  )
  a.go()
  const done = await running
  t.same(await a.post('/things', { name: 'slow' }, { 'idempotency-key': 'k2' }), {
    ...done,
    replayed: 'true',
  })

  t.equal((await a.post('/things', { name: 'x', fail: true }, { 'idempotency-key': 'k3' })).status, 400)
  t.equal((await a.post('/things', { name: 'x', fail: true }, { 'idempotency-key': 'k3' })).status, 400)
  t.equal((await a.post('/things', { name: 'x' }, { 'idempotency-key': 'k3' })).status, 201, 'released: runs')
  t.match(await a.post('/things', { name: 'a' }, { 'idempotency-key': 'a b' }), {
    status: 400,
    body: {
      message:
        'Invalid Idempotency-Key header: must be given once, 1 to 255 visible ASCII characters (e.g. a UUID)',
    },
  })
})

t.test('frames: the key is the idempotency_key metadata', async (t) => {
  const a = await app()
  t.teardown(() => a.fastify.close())
  const invoke = (name: string, metadata: Record<string, string>) =>
    a.fastify.trivium.invoke({
      endpoint: 'things.create',
      protocol: 'tcp',
      payload: Buffer.from(JSON.stringify({ name })),
      format: jsonFormat,
      requestId: 'r',
      log: a.fastify.log,
      metadata,
    })
  const first = await invoke('f', { idempotency_key: 'm1' })
  const again = await invoke('f', { idempotency_key: 'm1' })
  t.same(again.result, first.result)
  t.equal(a.runs(), 1)
  await t.rejects(invoke('g', { idempotency_key: 'm1' }), { code: 'TRV_UNPROCESSABLE_CONTENT' })
  await t.rejects(invoke('g', { idempotency_key: '' }), {
    message:
      'Invalid idempotency_key metadata: must be given once, 1 to 255 visible ASCII characters (e.g. a UUID)',
  })
})

t.test(
  'memory store: a claim whose lock passed is taken over (same body), an expired record too',
  async (t) => {
    const store = new MemoryIdempotencyStore()
    const scope: IdempotencyScope = { user: 'u', endpoint: 'e', key: 'k' }
    t.equal(await store.claim(scope, 'f1', 60_000, 1), undefined)
    t.same(await store.claim(scope, 'f2', 60_000, 1), { fingerprint: 'f1', done: false, response: undefined })
    await new Promise((r) => setTimeout(r, 5)) // the 1 ms lock has passed
    t.same(await store.claim(scope, 'f2', 60_000, 1), { fingerprint: 'f1', done: false, response: undefined })
    t.equal(
      await store.claim(scope, 'f1', 60_000, 60_000),
      undefined,
      'lock passed: the same body runs again',
    )
    await store.complete(scope, { ok: 1 })
    t.same(await store.claim(scope, 'f1', 60_000, 60_000), {
      fingerprint: 'f1',
      done: true,
      response: { ok: 1 },
    })
    const short = { ...scope, key: 'short' }
    t.equal(await store.claim(short, 'f1', 1, 1), undefined)
    await new Promise((r) => setTimeout(r, 5)) // the 1 ms window has passed
    t.equal(await store.claim(short, 'f9', 60_000, 60_000), undefined, 'expired: a new call')
  },
)
