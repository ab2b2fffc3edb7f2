// Idle timeout at tick precision: activity (a frame received, a call ended) sets a flag, and the next
// tick stamps lastActivity with its own clock reading. Driven with explicit tick times.
import triviumCore from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import {
  type CloseKind,
  type FrameCarrier,
  FrameSession,
  resolveFrameSessionOptions,
} from '@trivium/frame-session'
import { SessionHub } from '@trivium/wire/sessions'
import Fastify from 'fastify'
import t, { type Test } from 'tap'

const IDLE = 1000
type SessionContext = ConstructorParameters<typeof FrameSession>[1]

async function setup(t: Test) {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  let release: () => void = () => {}
  app.trivium.endpoint(
    'wait',
    { method: 'POST', url: '/wait' },
    () => new Promise((r) => (release = () => r({ ok: true }))),
  )
  await app.ready()
  t.teardown(() => app.close())
  const options = resolveFrameSessionOptions('test', { idleTimeoutMs: IDLE }, 10_000)
  const ctx: SessionContext = {
    transport: 'websocket',
    trivium: app.trivium,
    hub: new SessionHub(),
    options,
    bridge: undefined,
    routes: { call: () => Promise.reject(new Error('no named routes here')) },
    isShuttingDown: () => false,
    shutdownError: new Error('shutdown') as never,
    onClosed: () => {},
  }
  const sent: number[] = []
  const closes: CloseKind[] = []
  const carrier: FrameCarrier = {
    open: true,
    backlog: 0,
    sendBody: (type) => sent.push(type),
    sendFrame: () => {},
    drain: async () => {},
    close: (kind) => closes.push(kind),
  }
  const session = new FrameSession(carrier, ctx, {
    id: 't1',
    clientIp: '127.0.0.1',
    log: app.log,
    format: jsonFormat,
    credential: () => undefined,
  })
  return { session, sent, closes, release: () => release() }
}

t.test('a received frame is stamped by the next tick; idle counts from that stamp', async (t) => {
  const { session, closes } = await setup(t)
  const base = session.lastActivity
  session.tick(base + 500)
  t.equal(session.lastActivity, base, 'no activity: the stamp stays')
  session.touch()
  t.equal(session.lastActivity, base, 'touch reads no clock')
  session.tick(base + 600)
  t.equal(session.lastActivity, base + 600, 'the tick after the activity stamps it')
  session.tick(base + 600 + IDLE - 1)
  t.same(closes, [], 'not idle before idleTimeoutMs after the stamp')
  t.equal(session.closed, false)
  session.tick(base + 600 + IDLE)
  t.same(closes, ['idle'])
  t.equal(session.closed, true)
})

t.test('without activity the idle close comes idleTimeoutMs after the last stamp', async (t) => {
  const { session, closes } = await setup(t)
  const base = session.lastActivity
  session.tick(base + IDLE - 1)
  t.same(closes, [])
  session.tick(base + IDLE)
  t.same(closes, ['idle'])
})

t.test('a call that ends is activity; nothing is idle while a call runs', async (t) => {
  const { session, sent, closes, release } = await setup(t)
  const base = session.lastActivity
  session.receive({
    type: 1,
    requestId: 1,
    endpoint: 'wait',
    payload: new TextEncoder().encode('{}'),
  })
  session.tick(base + 10)
  t.equal(session.lastActivity, base, 'receive alone is not touch (the carrier touches)')
  t.equal(session.running, 1)
  session.tick(base + 10 * IDLE)
  t.same(closes, [], 'running: never idle')
  release()
  while (sent.length === 0) await new Promise((r) => setImmediate(r))
  t.same(sent, [2], 'RESPONSE')
  t.equal(session.running, 0)
  session.tick(base + 10 * IDLE + 1)
  t.equal(session.lastActivity, base + 10 * IDLE + 1, 'the end of the call is stamped by the next tick')
  t.same(closes, [])
  session.tick(base + 11 * IDLE)
  t.same(closes, [], 'one ms short')
  session.tick(base + 11 * IDLE + 1)
  t.same(closes, ['idle'])
})
