// One case of bench/js-path, in a process of its own (module evaluation order moves a process's speed,
// bench/README.md): builds the same app as the side-by-side server, then drives `fastify.routing` with
// @trivium/tcp's lean request/response pair (no socket, no kernel) for a few hundred thousand requests,
// 50 in flight, and prints `US <µs per request>` for each of five rounds.
// usage: case.mjs <bare|ceiling|core|public|secure> [requests per round]
const which = process.argv[2]
const N = Number(process.argv[3] ?? 200_000)
const IN_FLIGHT = 50
const tcp = (file) => new URL(`../../packages/tcp/dist/${file}`, import.meta.url).href
const { LeanRequest } = await import(tcp('lean-request.js'))
const { LeanResponse } = await import(tcp('lean-response.js'))

const headers = { host: 'localhost', origin: 'https://app.example.com' }
let app
let path
if (which === 'bare' || which === 'ceiling') {
  const { default: Fastify } = await import('fastify')
  const { SPEC_HEADERS } = await import('../side-by-side/headers.mjs')
  app = Fastify({ logger: false })
  if (which === 'ceiling') {
    app.addHook('onRequest', (_request, reply, done) => {
      reply.headers(SPEC_HEADERS)
      done()
    })
  }
  app.get('/hello', async () => ({ hello: 'world' }))
  path = '/hello'
} else {
  // The side-by-side servers: bench/core/server.mjs (`core`) and bench/stack/server.mjs.
  const { default: trivium } = await import('@trivium/core')
  const { default: Fastify } = await import('fastify')
  app = Fastify({ logger: false })
  await app.register(trivium)
  if (which !== 'core') {
    const { default: triviumAuth } = await import('@trivium/auth')
    const { default: triviumCodec } = await import('@trivium/codec')
    const { default: triviumProtections } = await import('@trivium/protections')
    const { createRbacMiddleware } = await import('@trivium/rbac')
    await app.register(triviumCodec)
    await app.register(triviumAuth, {
      secret: 'bench-secret-bench-secret-bench-secret-0123',
      issuer: 'bench',
    })
    app.trivium.use(createRbacMiddleware(), { name: 'rbac', after: ['auth'] })
    await app.register(triviumProtections, {
      rateLimit: { defaultLimit: { requests: 1e9, windowMs: 60_000 } },
    })
  }
  app.trivium.endpoint('public.hello', { method: 'GET', url: '/public', auth: 'public' }, () => ({
    hello: 'world',
  }))
  app.trivium.endpoint(
    'secure.hello',
    { method: 'GET', url: '/secure', permissions: ['hello:read'] },
    () => ({ hello: 'world' }),
  )
  await app.ready()
  path = which === 'secure' ? '/secure' : '/public'
  if (which === 'secure') {
    const token = await app.triviumAuth.issueAccessToken({
      id: 1,
      username: 'bench',
      email: 'bench@example.com',
      roles: ['member'],
      permissions: ['hello:read'],
    })
    headers.authorization = `Bearer ${token}`
  }
}
await app.ready()

const override = { clientIp: '127.0.0.1', protocol: 'http' }
const authorization = headers.authorization
function request() {
  return new Promise((resolve) => {
    // A fresh header object and token string per request, as Node's HTTP parser makes them.
    const h = { ...headers }
    if (authorization !== undefined) h.authorization = Buffer.from(authorization).toString('latin1')
    const req = new LeanRequest('GET', path, h, undefined, override)
    const res = new LeanResponse(req.socket, (r) => resolve(r.statusCode))
    app.routing(req, res)
  })
}
async function batch() {
  const pending = []
  for (let i = 0; i < IN_FLIGHT; i++) pending.push(request())
  for (const status of await Promise.all(pending)) if (status !== 200) throw new Error(`status ${status}`)
}
for (let i = 0; i < 2000; i++) await batch() // warm-up
for (let r = 0; r < 5; r++) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < N / IN_FLIGHT; i++) await batch()
  console.log(`US ${Number(process.hrtime.bigint() - t0) / 1000 / N}`)
}
