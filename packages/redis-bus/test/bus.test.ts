// Two "instances" in one process: two SessionHubs, each on its own RedisBus (own connections) on the
// real Redis, sharing one channel unique to the test.
import { RedisBus, RedisBusUnavailableError } from '@trivium/redis-bus'
import { SessionHub } from '@trivium/wire/sessions'
import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { captureLogger, fakeSession, REDIS_URL, uniq, until } from './helpers.js'

async function twoInstances(t: Test) {
  const channel = uniq('push')
  const client = new Redis(REDIS_URL)
  const logA = captureLogger()
  const logB = captureLogger()
  const busA = new RedisBus({ redis: REDIS_URL, channel, logger: logA })
  const busB = new RedisBus({ redis: client, channel, logger: logB }) // duplicated from a client
  const hubA = new SessionHub(busA)
  const hubB = new SessionHub(busB)
  t.teardown(async () => {
    hubA.close()
    hubB.close()
    await Promise.all([busA.close(), busB.close()])
    client.disconnect()
  })
  await Promise.all([busA.ready(), busB.ready()])
  return { channel, client, busA, busB, hubA, hubB, logA, logB }
}

t.test('toTopic and toUser published on A reach matching sessions on A and B exactly once', async (t) => {
  const { hubA, hubB } = await twoInstances(t)
  const a1 = fakeSession('a1')
  const b1 = fakeSession('b1')
  const b2 = fakeSession('b2')
  const a2 = fakeSession('a2')
  for (const [hub, s] of [
    [hubA, a1],
    [hubB, b1],
    [hubB, b2],
    [hubA, a2],
  ] as const)
    hub.add(s.session)
  hubA.subscribe(a1.session, 'news')
  hubB.subscribe(b1.session, 'news')
  hubB.identify(b2.session, 42, 'jti-1')
  hubA.identify(a2.session, 42)

  await hubA.toTopic('news', { headline: 'hi', n: 1 })
  await hubA.toUser(42, 'inbox', { unread: 3 })
  await hubA.toTopic('other', 'nobody')
  // Sentinel: per-publisher order means everything before it has arrived once it does.
  await hubA.toTopic('news', 'end')
  await until(() => a1.got.length === 2 && b1.got.length === 2, 5000, 'sentinel')
  t.same(a1.got, [
    ['news', { headline: 'hi', n: 1 }],
    ['news', 'end'],
  ])
  t.same(b1.got, a1.got, 'B got the same, once each')
  t.same(b2.got, [['inbox', { unread: 3 }]], 'toUser reaches the user on B (no topic needed)')
  t.same(a2.got, [['inbox', { unread: 3 }]], 'and on A, once')
})

t.test('publish is not delivered locally before Redis echoes it', async (t) => {
  const { hubA } = await twoInstances(t)
  const a = fakeSession('a')
  hubA.add(a.session)
  hubA.subscribe(a.session, 't')
  const p = hubA.toTopic('t', 1)
  t.same(a.got, [], 'nothing delivered synchronously')
  await p
  await until(() => a.got.length === 1)
  t.same(a.got, [['t', 1]])
})

t.test('publish order per publisher is kept on both instances (500 unawaited publishes)', async (t) => {
  const { hubA, hubB } = await twoInstances(t)
  const a = fakeSession('a')
  const b = fakeSession('b')
  hubA.add(a.session)
  hubB.add(b.session)
  hubA.subscribe(a.session, 'seq')
  hubB.subscribe(b.session, 'seq')
  const n = 500
  const started = Date.now()
  await Promise.all(Array.from({ length: n }, (_, i) => hubA.toTopic('seq', { i })))
  await until(() => a.got.length === n && b.got.length === n, 10_000, 'all messages')
  t.comment(`${n} pushes A→A+B in ${Date.now() - started} ms`)
  const expected = Array.from({ length: n }, (_, i) => ['seq', { i }])
  t.same(a.got, expected, 'A in order')
  t.same(b.got, expected, 'B in order')
  // Interleaved publishers: each one's order holds on the other side.
  a.got.length = 0
  b.got.length = 0
  await Promise.all(
    Array.from({ length: 100 }, (_, i) => [
      hubA.toTopic('seq', { a: i }),
      hubB.toTopic('seq', { b: i }),
    ]).flat(),
  )
  await until(() => a.got.length === 200 && b.got.length === 200, 10_000)
  for (const got of [a.got, b.got]) {
    const fromA = got.map(([, m]) => m as Record<string, number>).filter((m) => 'a' in m)
    const fromB = got.map(([, m]) => m as Record<string, number>).filter((m) => 'b' in m)
    t.same(
      fromA.map((m) => m.a),
      Array.from({ length: 100 }, (_, i) => i),
    )
    t.same(
      fromB.map((m) => m.b),
      Array.from({ length: 100 }, (_, i) => i),
    )
  }
})

t.test('topics and payloads with awkward characters survive the envelope', async (t) => {
  const { hubA, hubB } = await twoInstances(t)
  const b = fakeSession('b')
  hubB.add(b.session)
  const topic = 'ü "quoted" \\ \n 🎉'
  hubB.subscribe(b.session, topic)
  const message = { s: '"}\u2028\u0000,"v":2', nested: [1, null, { x: true }], big: 1e21 }
  await hubA.toTopic(topic, message)
  await hubA.toTopic(topic, undefined) // hub sends JSON null
  await until(() => b.got.length === 2)
  t.same(b.got, [
    [topic, message],
    [topic, null],
  ])
})

t.test('malformed messages from Redis are ignored and logged, never crash', async (t) => {
  const { channel, client, hubA, hubB, logB } = await twoInstances(t)
  const b = fakeSession('b')
  hubB.add(b.session)
  hubB.subscribe(b.session, 'x')
  hubB.identify(b.session, 7)
  const bad = [
    'not json',
    '',
    'null',
    '42',
    '"string"',
    '[]',
    '{"v":2,"topic":"x","message":1}',
    '{"v":1,"message":1}',
    '{"v":1,"topic":5,"message":1}',
    '{"v":1,"topic":"x"}',
    '{"v":1,"topic":"x","userId":7,"message":1}',
    '{"v":1,"topic":"x","message":1', // truncated
    '\u00ff\u0000',
  ]
  for (const payload of bad) await client.publish(channel, payload)
  await hubA.toTopic('x', 'good')
  await until(() => b.got.length === 1)
  t.same(b.got, [['x', 'good']], 'only the valid message was delivered')
  const warns = logB.entries.filter((e) => e.msg === '@trivium/redis-bus: malformed message ignored')
  t.equal(warns.length, 1, 'logged once, not per message (rate-limited)')
  t.equal(warns[0]!.obj.channel, channel)
  t.equal(warns[0]!.obj.sample, 'not json')
})

t.test('a throwing listener is logged and does not stop other listeners', async (t) => {
  const { busA, busB, logB } = await twoInstances(t)
  const seen: string[] = []
  const off1 = busB.subscribe(() => {
    throw new Error('boom')
  })
  const off2 = busB.subscribe((e) => seen.push(e.json))
  await busB.ready()
  await busA.publish({ topic: 't', json: '{"a":1}' })
  await until(() => seen.length === 1)
  t.same(seen, ['{"a":1}'])
  t.ok(logB.entries.some((e) => e.level === 'error' && e.msg === '@trivium/redis-bus: message handler threw'))
  off1()
  off2()
  off2() // idempotent
})

t.test('options are validated; closed bus rejects', async (t) => {
  t.throws(() => new RedisBus({} as never), {
    message: '@trivium/redis-bus: redis must be a Redis URL, an ioredis Redis or an ioredis Cluster',
    code: 'TRV_REDIS_BUS_REDIS',
  })
  t.throws(() => new RedisBus({ redis: REDIS_URL, publishTimeoutMs: 0 }), {
    message: '@trivium/redis-bus: publishTimeoutMs must be a positive integer (milliseconds)',
    code: 'TRV_REDIS_BUS_PUBLISH_TIMEOUT',
  })
  const bus = new RedisBus({ redis: REDIS_URL, channel: uniq('push'), logger: captureLogger() })
  t.equal(bus.channel.startsWith('test_'), true)
  await bus.close()
  await bus.close()
  const err = await bus.publish({ topic: 't', json: '1' }).catch((e: unknown) => e)
  t.ok(err instanceof RedisBusUnavailableError)
  t.equal((err as { code: string }).code, 'TRV_REDIS_BUS_UNAVAILABLE')
  t.equal((err as Error).message, '@trivium/redis-bus: Redis unavailable: closed')
  const defaults = new RedisBus({ redis: REDIS_URL, logger: captureLogger() })
  t.equal(defaults.channel, 'trivium:push')
  await defaults.close()
})

t.test('every received message reports its lag on trivium:bus:message', async (t) => {
  const { subscribe, unsubscribe } = await import('node:diagnostics_channel')
  const { channel, hubA, hubB } = await twoInstances(t)
  const seen: Array<{ channel: string; lagSeconds: number }> = []
  const listener = (message: unknown) => seen.push(message as { channel: string; lagSeconds: number })
  subscribe('trivium:bus:message', listener)
  t.teardown(() => unsubscribe('trivium:bus:message', listener))
  const b1 = fakeSession('b1')
  hubB.add(b1.session)
  hubB.subscribe(b1.session, 'news')
  const before = Date.now()
  await hubA.toTopic('news', { n: 1 })
  await until(() => seen.filter((m) => m.channel === channel).length >= 2) // A and B both receive it
  const mine = seen.filter((m) => m.channel === channel)
  t.equal(mine.length, 2)
  for (const m of mine) {
    t.ok(m.lagSeconds >= 0 && m.lagSeconds <= (Date.now() - before) / 1000 + 0.001, `lag ${m.lagSeconds} s`)
  }
})
