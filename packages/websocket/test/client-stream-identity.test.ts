// Issue 44.1 on the package defaults (no `identify` hook: the connection learns its identity from calls):
// a client stream as the connection's first call is seen by `closeSessions` and by the token's expiry
// from the moment authentication accepts its token, while its items are still arriving: ERROR id 0,
// close 4001, and no item sent after that reaches the handler (PROTOCOL.md "Frames": identity).
import { FrameType } from '@trivium/wire'
import t, { type Test } from 'tap'
import { buildApp, Client, dec, enc, until } from './helpers.js'

const EMPTY = new Uint8Array(0)

async function appWithImport(expiresInMs = 3_600_000) {
  const received: unknown[] = []
  const built = await buildApp({}, (app) => {
    app.trivium.clientStream(
      'collect',
      { method: 'POST', url: '/collect' },
      async (items: AsyncIterable<unknown>) => {
        for await (const item of items) received.push(item)
        return { count: received.length }
      },
    )
    // The stand-in auth of helpers.ts, with a shorter expiry for tokens "e<id>".
    app.trivium.use(async (call, next) => {
      const token = call.credential
      if (typeof token === 'string' && token.startsWith('e'))
        call.identity = {
          userId: Number(token.slice(1)),
          roles: [],
          permissions: [],
          tokenId: `j${token.slice(1)}`,
          expiresAt: Date.now() + expiresInMs,
        }
      return next()
    })
  })
  return { ...built, received }
}

/** Opens `collect` as the first call and has one item reach the handler. */
async function streamStarted(url: string, token: string, received: unknown[]): Promise<Client> {
  const c = await Client.open(`${url}?token=${token}`)
  c.send({ type: FrameType.REQUEST, requestId: 1, endpoint: 'collect', payload: EMPTY })
  await c.reply(1, FrameType.CREDIT)
  c.send({ type: FrameType.CLIENT_ITEM, requestId: 1, payload: enc({ n: 1 }) })
  await until(() => received.length === 1, 'the first item reached the handler')
  return c
}

/** ERROR id 0 (401 `code`, `message`), then close 4001 with the message; the stream itself got no RESPONSE. */
async function endedWith(t: Test, c: Client, code: string, message: string): Promise<void> {
  await until(() => c.closeCode !== undefined, 'the close')
  t.same([c.closeCode, c.closeReason], [4001, message])
  const last = c.frames.at(-1)
  t.same([last?.type, last?.requestId], [FrameType.ERROR, 0], 'ERROR id 0 before the close')
  t.match(dec(last?.payload as Uint8Array), { statusCode: 401, code, message })
  t.notOk(
    c.frames.some((f) => f.type === FrameType.RESPONSE),
    'the stream got no RESPONSE',
  )
}

t.test('closeSessions ends a client stream that is the connection’s only call', async (t) => {
  const { app, url, received } = await appWithImport()
  t.teardown(() => app.close())
  const c = await streamStarted(url, 'u7', received)
  t.equal(app.push.closeSessions({ tokenId: 'j7' }, 'Token has been revoked'), 1, 'the session is found')
  c.send({ type: FrameType.CLIENT_ITEM, requestId: 1, payload: enc({ n: 2 }) })
  c.send({ type: FrameType.CLIENT_END, requestId: 1, payload: EMPTY })
  await endedWith(t, c, 'TRV_UNAUTHORIZED', 'Token has been revoked')
  t.same(received, [{ n: 1 }], 'the item sent after the close never reached the handler')
})

t.test('the token’s expiry ends a client stream that is the connection’s only call', async (t) => {
  const { app, url, received } = await appWithImport(3000)
  t.teardown(() => app.close())
  const c = await streamStarted(url, 'e8', received)
  await endedWith(t, c, 'TRV_TOKEN_EXPIRED', 'Token has expired')
  t.same(received, [{ n: 1 }])
})
