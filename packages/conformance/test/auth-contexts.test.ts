// Issue 40 item 7: @trivium/auth per Fastify context. Two sibling contexts each register their own
// @trivium/auth (own secret, issuer, public endpoints, routes prefix); each endpoint's call is checked by
// the auth of its own context on every transport (HTTP, WebSocket with the upgrade's token, TCP direct
// and TCP inject), and a plain `config.triviumRoute` route by its context's.
import triviumAuth, { type AuthService, triviumUser } from '@trivium/auth'
import type { EndpointSpec } from '@trivium/client/node'
import triviumCore, { jsonSchemaModel, type TriviumCall, triviumFactoryOptions } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import { clientFor, type Listening, listening, outcome, serversByMode, TARGETS } from './transports.ts'

const SECRET_A = 'context-a-secret-context-a-secret-0123456789'
const SECRET_B = 'context-b-secret-context-b-secret-9876543210'

const Empty = jsonSchemaModel<Record<string, never>>('Empty', { type: 'object' })
const Who = jsonSchemaModel<{ context: string; userId: number | null }>('Who', {
  type: 'object',
  properties: { context: { type: 'string' }, userId: { type: ['integer', 'null'] } },
})
const spec = (name: string, url: string): EndpointSpec => ({
  name,
  method: 'GET',
  url,
  request: Empty as EndpointSpec['request'],
  response: Who as EndpointSpec['response'],
  streaming: false,
})
const endpoints = {
  aMe: spec('a.me', '/a/me'),
  aOpen: spec('a.open', '/a/open'),
  bMe: spec('b.me', '/b/me'),
}

interface Server extends Listening {
  authA: AuthService
  authB: AuthService
}

const who = (context: string) => (_req: Record<string, never>, call: TriviumCall<Record<string, never>>) => ({
  context,
  userId: (call.identity?.userId as number | undefined) ?? null,
})

async function start(tcpMode: 'direct' | 'inject'): Promise<Server> {
  const app = Fastify(triviumFactoryOptions())
  await app.register(triviumCore)
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0, mode: tcpMode })
  let authA!: AuthService
  let authB!: AuthService
  await app.register(
    async (a) => {
      await a.register(triviumAuth, { secret: SECRET_A, issuer: 'issuer-a', publicEndpoints: ['a.open'] })
      authA = a.triviumAuth
      a.trivium.endpoint('a.me', { method: 'GET', url: '/me', request: Empty, response: Who }, who('a'))
      a.trivium.endpoint('a.open', { method: 'GET', url: '/open', request: Empty, response: Who }, who('a'))
      a.get('/legacy', { config: { triviumRoute: {} } }, async (request) => ({
        context: 'a',
        userId: triviumUser(request)?.userId ?? null,
      }))
    },
    { prefix: '/a' },
  )
  await app.register(
    async (b) => {
      await b.register(triviumAuth, { secret: SECRET_B, issuer: 'issuer-b' })
      authB = b.triviumAuth
      b.trivium.endpoint('b.me', { method: 'GET', url: '/me', request: Empty, response: Who }, who('b'))
      b.get('/legacy', { config: { triviumRoute: {} } }, async (request) => ({
        context: 'b',
        userId: triviumUser(request)?.userId ?? null,
      }))
    },
    { prefix: '/b' },
  )
  return { ...(await listening(app)), authA, authB }
}

const serverFor = serversByMode(t, start)

for (const target of TARGETS) {
  t.test(`${target}: each endpoint is checked by the auth of its own context`, async (t) => {
    const server = await serverFor(target)
    const tokenA = await server.authA.issueAccessToken({ id: 1, username: 'ann', email: 'ann@a.example' })
    const tokenB = await server.authB.issueAccessToken({ id: 2, username: 'bob', email: 'bob@b.example' })
    // The message each context's verifier gives the other context's token (wrong signature).
    const foreignInA = `Invalid token: ${server.authA.validate(tokenB).error}`
    const foreignInB = `Invalid token: ${server.authB.validate(tokenA).error}`
    t.not(foreignInA, 'Invalid token: undefined')

    // Over WebSocket the token is the upgrade's: one connection per token, calls to both contexts.
    const cases = [
      {
        token: tokenA,
        context: 'a',
        userId: 1,
        own: endpoints.aMe,
        other: endpoints.bMe,
        refusal: foreignInB,
      },
      {
        token: tokenB,
        context: 'b',
        userId: 2,
        own: endpoints.bMe,
        other: endpoints.aMe,
        refusal: foreignInA,
      },
    ]
    for (const { token, context, userId, own, other, refusal } of cases) {
      const client = clientFor(t, server, target, endpoints, token)
      t.same(await outcome(client, own), { context, userId }, `${context}'s token in ${own.name}`)
      t.same(
        await outcome(client, other),
        { status: 401, error: 'UnauthorizedException', message: refusal },
        `${context}'s token is refused in ${other.name}`,
      )
      t.same(await outcome(client, endpoints.aOpen), { context: 'a', userId: null }, "A's public endpoint")
    }

    const anonymous = clientFor(t, server, target, endpoints, undefined)
    t.same(await outcome(anonymous, endpoints.aOpen), { context: 'a', userId: null })
    for (const spec of [endpoints.aMe, endpoints.bMe]) {
      t.same(
        await outcome(anonymous, spec),
        { status: 401, error: 'UnauthorizedException', message: 'Authentication required' },
        `${spec.name} without a token`,
      )
    }
  })
}

t.test("a plain route with config.triviumRoute is guarded by its own context's auth", async (t) => {
  const server = await serverFor('http')
  const tokenA = await server.authA.issueAccessToken({ id: 1, username: 'ann', email: 'ann@a.example' })
  const tokenB = await server.authB.issueAccessToken({ id: 2, username: 'bob', email: 'bob@b.example' })
  const get = async (path: string, token: string) => {
    const res = await fetch(`${server.http}${path}`, { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  t.same(await get('/a/legacy', tokenA), { status: 200, body: { context: 'a', userId: 1 } })
  t.same(await get('/b/legacy', tokenB), { status: 200, body: { context: 'b', userId: 2 } })
  t.match(await get('/a/legacy', tokenB), {
    status: 401,
    body: {
      error: 'UnauthorizedException',
      message: `Invalid token: ${server.authA.validate(tokenB).error}`,
    },
  })
  t.match(await get('/b/legacy', tokenA), { status: 401, body: { error: 'UnauthorizedException' } })
})
