// Issue 40 item 4: TriviumIdentity extended by declaration merging, filled by a middleware after auth,
// on every transport (HTTP, WebSocket, TCP direct, TCP inject). The fields auth verified stay read-only:
// assigning, redefining or deleting one throws, and the handler sees the token's values.
import triviumAuth from '@trivium/auth'
import type { EndpointSpec } from '@trivium/client/node'
import triviumCore, { jsonSchemaModel, type TriviumCall, triviumFactoryOptions } from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import triviumWebSocket from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import { clientFor, listening, outcome, serversByMode, TARGETS } from './transports.ts'

declare module '@trivium/core' {
  interface TriviumIdentity {
    tenantId?: string
  }
}

const SECRET = 'identity-extension-secret-0123456789-abcdef'

interface Seen {
  userId: number
  tenantId: string | null
  roles: string[]
  expiresAt: number
  refused: string[]
}
const Empty = jsonSchemaModel<Record<string, never>>('Empty', { type: 'object' })
const SeenModel = jsonSchemaModel<Seen>('Seen', { type: 'object' })
const whoami: EndpointSpec = {
  name: 'whoami',
  method: 'GET',
  url: '/whoami',
  request: Empty as EndpointSpec['request'],
  response: SeenModel as EndpointSpec['response'],
  streaming: false,
}

/** Runs `change`; the message of the error it throws (none: 'allowed'). */
function attempt(change: () => void): string {
  try {
    change()
    return 'allowed'
  } catch (err) {
    return (err as Error).message
  }
}

async function start(mode: 'direct' | 'inject') {
  const app = Fastify(triviumFactoryOptions())
  await app.register(triviumCore)
  await app.register(triviumAuth, { secret: SECRET, issuer: 'identity' })
  await app.register(triviumWebSocket)
  await app.register(triviumTcp, { port: 0, mode })
  app.trivium.use(
    (call, next) => {
      const identity = call.identity
      if (identity !== undefined) {
        identity.tenantId = `tenant-${identity.userId}` // the documented extension path
        call.context.refused = [
          // @ts-expect-error the verified fields are readonly in the type too
          attempt(() => (identity.userId = 999)),
          // @ts-expect-error
          attempt(() => (identity.expiresAt = Number.MAX_SAFE_INTEGER)),
          attempt(() => delete (identity as { roles?: unknown }).roles),
          attempt(() => Object.defineProperty(identity, 'tokenId', { value: 'forged' })),
        ]
      }
      return next()
    },
    { name: 'tenant', after: ['auth'] },
  )
  app.trivium.endpoint(
    'whoami',
    { method: 'GET', url: '/whoami', request: Empty, response: SeenModel },
    (_req: Record<string, never>, call: TriviumCall<Record<string, never>>) => ({
      userId: call.identity?.userId as number,
      tenantId: call.identity?.tenantId ?? null,
      roles: [...(call.identity?.roles ?? [])],
      expiresAt: call.identity?.expiresAt ?? 0,
      refused: call.context.refused as string[],
    }),
  )
  return listening(app)
}

const serverFor = serversByMode(t, start)
const readOnly = (field: string) =>
  `@trivium/auth: call.identity.${field} is read-only: it was verified from the token (add a field of your own to TriviumIdentity instead)`

for (const target of TARGETS) {
  t.test(`${target}: a middleware adds tenantId; the verified fields stay the token's`, async (t) => {
    const server = await serverFor(target)
    const token = await server.app.triviumAuth.issueAccessToken({
      id: 3,
      username: 'tia',
      email: 'tia@example.com',
      roles: ['member'],
    })
    const expiresAt = server.app.triviumAuth.validate(token).claims!.expiresAtMs
    const client = clientFor(t, server, target, { whoami }, token)
    for (let call = 1; call <= 2; call++) {
      t.same(
        await outcome(client, whoami),
        {
          userId: 3,
          tenantId: 'tenant-3',
          roles: ['member'],
          expiresAt,
          refused: [readOnly('userId'), readOnly('expiresAt'), readOnly('roles'), readOnly('tokenId')],
        },
        `call ${call} (a connection's second call gets an identity of its own)`,
      )
    }
  })
}

t.test('the identity serializes and spreads with every field, its own ones included', async (t) => {
  const server = await serverFor('http')
  const token = await server.app.triviumAuth.issueAccessToken({ id: 4, username: 'ulf', email: 'u@x.io' })
  const claims = server.app.triviumAuth.validate(token).claims!
  const { identityOf } = await import('@trivium/auth')
  const identity = identityOf(claims)
  identity.tenantId = 'acme'
  const expected = {
    userId: 4,
    username: 'ulf',
    roles: [],
    permissions: [],
    tokenId: claims.jti,
    expiresAt: claims.expiresAtMs,
    tenantId: 'acme',
  }
  t.same(JSON.parse(JSON.stringify(identity)), expected)
  t.same({ ...identity }, expected)
  t.equal(Object.isFrozen(Object.freeze(identity)), true, 'freezing it is allowed (it changes no field)')
})
