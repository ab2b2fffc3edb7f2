// Issue 41 item 1: a Fastify route named in `config.triviumRoute.name` is an endpoint on every frame
// transport, called through the route itself (its hooks, the app's @fastify/jwt, Trivium's guard), and
// refuses bad input over real sockets with the one error body: a body its schema refuses, invalid UTF-8,
// a payload over the limit, a binary request for the JSON-only route (PROTOCOL.md "Named routes").
import fastifyJwt from '@fastify/jwt'
import triviumAuth from '@trivium/auth'
import triviumCodec from '@trivium/codec'
import { registerNamedRoutes } from '@trivium/conformance'
import triviumCore from '@trivium/core'
import triviumProtections from '@trivium/protections'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import { FrameType } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { CARRIAGES, type Carriage, dec, json, RawClient, request } from './raw-frames.ts'

const SECRET = 'named-routes-secret-named-routes-secret-0123'
const ISSUER = 'named-routes'

interface NamedApp {
  app: FastifyInstance
  wsUrl: string
  tcpPort: number
  member: string
  jwt: string
}

async function namedApp(mode: 'direct' | 'inject'): Promise<NamedApp> {
  const app = Fastify({ logger: false })
  await app.register(triviumCore, { bodyLimit: 64 * 1024 })
  await app.register(triviumCodec)
  await app.register(triviumAuth, { secret: SECRET, issuer: ISSUER })
  await app.register(triviumProtections) // the rate limit one of the named routes declares
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0, mode })
  // The application's own JWT check, in its own route hook (its own secret and tokens).
  await app.register(fastifyJwt, { secret: `${SECRET}-app` })
  registerNamedRoutes(app)
  app.get(
    '/me',
    {
      onRequest: (request) => request.jwtVerify(),
      config: { triviumRoute: { name: 'me.jwt', auth: 'public' } },
    },
    async (request) => ({ sub: (request.user as { sub: string }).sub }),
  )
  // A hook answering with a body of its own (as @fastify/auth's `reply.code(403).send(…)`), and a route
  // answering text: frames carry the one error body and JSON (PROTOCOL.md "Named routes").
  app.get(
    '/denied',
    {
      onRequest: (_request, reply, done) => {
        reply.code(403).send({ denied: true })
        done()
      },
      config: { triviumRoute: { name: 'hook.denied', auth: 'public' } },
    },
    async () => ({}),
  )
  app.get(
    '/text',
    { config: { triviumRoute: { name: 'text.plain', auth: 'public' } } },
    async (_r, reply) => {
      reply.type('text/plain')
      return 'plain text'
    },
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const subject = { id: 7, username: 'named', email: 'named@example.com', roles: [], permissions: [] }
  return {
    app,
    wsUrl: `ws://127.0.0.1:${port}/ws?format=json`,
    tcpPort: (app.triviumTcp.address() as { port: number }).port,
    member: await app.triviumAuth.issueAccessToken(subject),
    jwt: app.jwt.sign({ sub: 'app-user' }),
  }
}

const apps = new Map<string, Promise<NamedApp>>()
function appFor(carriage: Carriage): Promise<NamedApp> {
  const mode = carriage === 'tcp-inject' ? 'inject' : 'direct'
  let app = apps.get(mode)
  if (app === undefined) {
    app = namedApp(mode)
    apps.set(mode, app)
  }
  return app
}
t.teardown(async () => {
  for (const app of apps.values()) await (await app).app.close()
})

async function answer(client: RawClient, id: number) {
  const frames = await client.until(() => client.answerTo(id) !== undefined)
  const frame = frames.find(
    (f) => f.requestId === id && (f.type === FrameType.RESPONSE || f.type === FrameType.ERROR),
  )
  t.ok(frame, `an answer to ${id}`)
  return { type: frame?.type, body: frame?.payload.length ? dec(frame.payload) : undefined }
}

for (const carriage of CARRIAGES) {
  t.test(carriage, async (t) => {
    const server = await appFor(carriage)
    const client = await RawClient.open(carriage, server, server.member)
    t.teardown(() => client.close())

    await t.test('the route answers by name, through its own hook and the guard', async (t) => {
      client.write(request(1, 'orders.create', { shop: 'corner', item: 'tea', quantity: 2 }))
      const { type, body } = await answer(client, 1)
      t.equal(type, FrameType.RESPONSE)
      t.same(body, { shop: 'corner', item: 'tea', quantity: 2, authenticated: true, hooked: true })
    })

    await t.test('a body its schema refuses: 400 in the error body, with details', async (t) => {
      client.write(request(2, 'orders.create', { shop: 'corner', item: '', quantity: 0, extra: 1 }))
      const { type, body } = await answer(client, 2)
      t.equal(type, FrameType.ERROR)
      t.match(body, {
        statusCode: 400,
        code: 'TRV_VALIDATION',
        error: 'ValidationException',
        message: 'Invalid OrdersCreateRequest: (body) must NOT have additional properties',
        requestId: /:2$/,
      })
      t.same(body.details, [
        { field: '(body)', message: 'must NOT have additional properties' },
        { field: 'item', message: 'must NOT have fewer than 1 characters' },
        { field: 'quantity', message: 'must be >= 1' },
      ])
    })

    await t.test('invalid UTF-8 is refused before the route runs', async (t) => {
      const bad = new Uint8Array([
        0x7b, 0x22, 0x69, 0x74, 0x65, 0x6d, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d,
      ])
      client.write({ type: FrameType.REQUEST, requestId: 3, endpoint: 'orders.create', payload: bad })
      const { type, body } = await answer(client, 3)
      t.equal(type, FrameType.ERROR)
      t.match(body, { statusCode: 400, code: 'TRV_VALIDATION', message: 'Payload is not valid UTF-8' })
    })

    await t.test("the app's @fastify/jwt runs in the route's hook, reading the frame's token", async (t) => {
      client.write(request(4, 'me.jwt', {}))
      const refused = await answer(client, 4)
      t.equal(refused.type, FrameType.ERROR)
      t.match(refused.body, { statusCode: 401, code: 'TRV_UNAUTHORIZED', error: 'UnauthorizedException' })
      const own = await RawClient.open(carriage, server, server.jwt)
      t.teardown(() => own.close())
      own.write(request(5, 'me.jwt', {}))
      t.same(await answer(own, 5), { type: FrameType.RESPONSE, body: { sub: 'app-user' } })
    })

    await t.test("a hook's own error answer becomes the error body of its status", async (t) => {
      client.write(request(9, 'hook.denied', {}))
      const { type, body } = await answer(client, 9)
      t.equal(type, FrameType.ERROR)
      t.match(body, {
        statusCode: 403,
        code: 'TRV_FORBIDDEN',
        error: 'ForbiddenException',
        message: 'Forbidden',
      })
    })

    await t.test('a route answering text is a server fault on frames: 500', async (t) => {
      client.write(request(10, 'text.plain', {}))
      const { type, body } = await answer(client, 10)
      t.equal(type, FrameType.ERROR)
      t.match(body, { statusCode: 500, code: 'TRV_INTERNAL', message: 'Internal server error' })
    })

    await t.test('a binary request for the JSON-only route is 415', async (t) => {
      const binary = await RawClient.open(carriage, server, server.member, 'binary')
      t.teardown(() => binary.close())
      binary.write({
        type: FrameType.REQUEST,
        requestId: 6,
        endpoint: 'orders.create',
        payload: new Uint8Array([1, 0]),
      })
      const { type, body } = await answer(binary, 6)
      t.equal(type, FrameType.ERROR)
      t.match(body, {
        statusCode: 415,
        code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
        message: 'Endpoint orders.create has no binary request format',
      })
    })

    await t.test('a payload over the body limit is 413, and the process is unharmed', async (t) => {
      const huge = await RawClient.open(carriage, server, server.member)
      t.teardown(() => huge.close())
      huge.write(request(7, 'orders.create', { shop: 'corner', item: 'x'.repeat(128 * 1024), quantity: 1 }))
      const frames = await huge.until((fs) => fs.some((f) => f.type === FrameType.ERROR))
      if (carriage === 'websocket') {
        // PROTOCOL.md "Limits": a WebSocket message over maxPayload is closed 1009 by `ws`.
        await huge.closed
        t.equal(huge.closeCode, 1009)
      } else {
        const error = frames.find((f) => f.type === FrameType.ERROR)
        t.match(error && dec(error.payload), { statusCode: 413, code: 'TRV_PAYLOAD_TOO_LARGE' })
      }
      client.write(request(8, 'orders.list', { shop: 'corner', limit: 3 }))
      t.same(await answer(client, 8), { type: FrameType.RESPONSE, body: { shop: 'corner', limit: 3 } })
    })
  })
}

t.test('json() of the raw helpers is what the frames carry', async (t) => {
  t.same(dec(json({ a: 1 })), { a: 1 })
})
