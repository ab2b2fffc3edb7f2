// A TCP session ends when the earliest token expiry seen on it passes: ERROR id 0
// TokenExpiredException `Token has expired`, then close (the WebSocket equivalent is close 4001).
import type { Frame } from '@trivium/wire'
import { FrameType } from '@trivium/wire'
import t from 'tap'
import { buildApp, dec, requestFrame, TcpClient } from './helpers.ts'

const EXPIRED = {
  statusCode: 401,
  code: 'TRV_TOKEN_EXPIRED',
  error: 'TokenExpiredException',
  message: 'Token has expired',
}

/** Calls `whoami` with each token in turn (waiting for each answer) and returns the client. */
async function session(port: number, tokens: string[]): Promise<TcpClient> {
  const c = await TcpClient.open(port)
  let id = 0
  for (const token of tokens) {
    c.write(requestFrame(++id, 'whoami', undefined, { auth_token: token }))
    const reply = await c.reply(id)
    if (reply?.type !== FrameType.RESPONSE) throw new Error(`call ${id} failed`)
  }
  return c
}

/** When the connection closes, and the frames other than the calls' responses. */
function closing(c: TcpClient): Promise<{ at: number; tail: Frame[] }> {
  const timer = setTimeout(() => c.socket.destroy(), 5000)
  return c.closed.then(() => {
    clearTimeout(timer)
    return { at: Date.now(), tail: c.frames.filter((f) => f.type !== FrameType.RESPONSE) }
  })
}

for (const mode of ['direct', 'inject'] as const) {
  t.test(`${mode}: the session closes when the earliest token expiry passes`, async (t) => {
    const { app, port } = await buildApp({ mode })
    t.teardown(() => app.close())
    const now = Math.floor(Date.now() / 1000)
    const soon = now + 2
    const later = now + 60

    const [exp, expiresAt, earlierSecond, laterSecond, none] = await Promise.all([
      session(port, [`u7:${soon}`]), // `exp` in seconds
      session(port, [`u8:${soon}`]), // a second session, same expiry
      session(port, [`u9:${later}`, `u9:${soon}`]), // a later token first: the earlier expiry wins
      session(port, [`u10:${soon}`, `u10:${later}`]), // a fresher token does not extend the session
      session(port, ['u11']), // no expiry: stays open
    ])
    t.equal(app.triviumTcp.connections, 5)

    const expiring = Object.entries({ exp, expiresAt, earlierSecond, laterSecond })
    const closes = expiring.map(([, c]) => closing(c))
    for (const [i, [name]] of expiring.entries()) {
      const { at, tail } = await (closes[i] as ReturnType<typeof closing>)
      // timers may fire a millisecond early against the wall clock; the connection re-checks
      t.ok(at >= soon * 1000, `${name}: closed at or after exp (${at - soon * 1000} ms after)`)
      t.ok(at < soon * 1000 + 1000, `${name}: closed within a second of exp`)
      t.equal(tail.length, 1, `${name}: one frame before the close`)
      t.equal(tail[0]?.type, FrameType.ERROR)
      t.equal(tail[0]?.requestId, 0)
      t.match(dec(tail[0]?.payload as Uint8Array), { ...EXPIRED, requestId: /^t[0-9a-z]+:0$/ })
    }
    t.notOk(none.ended, 'a session without a token expiry stays open')
    none.write(requestFrame(2, 'whoami', undefined, { auth_token: 'u11' }))
    t.equal((await none.reply(2))?.type, FrameType.RESPONSE)
    t.equal(app.triviumTcp.connections, 1)
    none.socket.destroy()
  })
}

t.test(
  'an expiry already past when the call succeeds: the response, then ERROR id 0 and close',
  async (t) => {
    const { app, port } = await buildApp()
    t.teardown(() => app.close())
    const past = Math.floor(Date.now() / 1000) - 1
    const c = await session(port, [`u12:${past}`])
    await c.closed
    t.same(
      c.frames.map((f) => [f.type, f.requestId]),
      [
        [FrameType.RESPONSE, 1],
        [FrameType.ERROR, 0],
      ],
    )
    t.match(dec(c.frames[1]?.payload as Uint8Array), EXPIRED)
  },
)

t.test('calls without a user or without claims set no timer', async (t) => {
  const { app, port } = await buildApp({ idleTimeoutMs: 60_000 })
  t.teardown(() => app.close())
  const c = await session(port, ['anonymous', 'u13'])
  await new Promise((r) => setTimeout(r, 300))
  t.notOk(c.ended)
  t.same(
    c.frames.map((f) => f.type),
    [FrameType.RESPONSE, FrameType.RESPONSE],
  )
  c.socket.destroy()
})
