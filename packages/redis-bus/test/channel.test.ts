// RedisChannel<T> between two "instances" (two connection pairs) on the real Redis: delivery, meta,
// validation, sharing one RedisPubSub with a RedisBus, and publish→receive latency.
import { performance } from 'node:perf_hooks'
import { createRedisChannel, instanceId, RedisBus, RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { Redis } from 'ioredis'
import t from 'tap'
import { captureLogger, percentile, REDIS_URL, uniq, until } from './helpers.js'

interface Revocation {
  jti: string
  exp: number
}

const isRevocation = (m: unknown): m is Revocation =>
  typeof m === 'object' && m !== null && typeof (m as Revocation).jti === 'string'

t.test('publish on A reaches subscribers on A and B once, with who sent it', async (t) => {
  const prefix = `${uniq('ch')}:`
  const a = new RedisChannel<Revocation>('revocations', { redis: REDIS_URL, prefix, logger: captureLogger() })
  const b = createRedisChannel<Revocation>('revocations', {
    redis: REDIS_URL,
    prefix,
    logger: captureLogger(),
  })
  t.teardown(() => Promise.all([a.close(), b.close()]))
  t.equal(a.channel, `${prefix}revocations`)
  const gotA: unknown[] = []
  const gotB: unknown[] = []
  a.subscribe((m, meta) => gotA.push([m, meta]))
  b.subscribe((m, meta) => gotB.push([m, meta]))
  await Promise.all([a.ready(), b.ready()])
  const receivers = await a.publish({ jti: 'j1', exp: 1 })
  t.equal(receivers, 2, 'Redis counted both subscriber connections')
  await a.publish({ jti: 'end', exp: 0 })
  await until(() => gotA.length === 2 && gotB.length === 2)
  const meta = { from: instanceId(), local: true } // same process: both "instances" share the id
  t.same(gotB, [
    [{ jti: 'j1', exp: 1 }, meta],
    [{ jti: 'end', exp: 0 }, meta],
  ])
  t.same(gotA, gotB)
  t.match(instanceId(), /^[0-9a-f-]{36}$/)
})

t.test(
  'encode: the payload publish sends, for a PUBLISH made elsewhere (e.g. in a Lua script)',
  async (t) => {
    const prefix = `${uniq('enc')}:`
    const channel = new RedisChannel<Revocation>('list', {
      redis: REDIS_URL,
      prefix,
      logger: captureLogger(),
    })
    const raw = new Redis(REDIS_URL)
    t.teardown(async () => {
      await channel.close()
      raw.disconnect()
    })
    const got: unknown[] = []
    channel.subscribe((m, meta) => got.push([m, meta]))
    await channel.ready()
    t.equal(channel.subscribed, true)
    const before = Date.now()
    const payload = channel.encode({ jti: 'j9', exp: 7 })
    const envelope = JSON.parse(payload)
    t.same(Object.keys(envelope), ['v', 'from', 'at', 'data'])
    t.equal(envelope.v, 1)
    t.equal(envelope.from, instanceId())
    t.ok(envelope.at >= before && envelope.at <= Date.now(), 'send time')
    t.same(envelope.data, { jti: 'j9', exp: 7 })
    t.equal(await raw.eval("return redis.call('PUBLISH', ARGV[1], ARGV[2])", 0, channel.channel, payload), 1)
    await until(() => got.length === 1)
    t.same(got, [
      [
        { jti: 'j9', exp: 7 },
        { from: instanceId(), local: true },
      ],
    ])
    t.throws(() => channel.encode(undefined as never), TypeError)
    await channel.close()
    t.equal(channel.subscribed, false, 'not subscribed after close')
  },
)

t.test('validate drops messages of the wrong shape; unsubscribe stops delivery', async (t) => {
  const prefix = `${uniq('ch')}:`
  const log = captureLogger()
  const ch = new RedisChannel<Revocation>('r', {
    redis: REDIS_URL,
    prefix,
    logger: log,
    validate: isRevocation,
  })
  const raw = new Redis(REDIS_URL)
  t.teardown(async () => {
    await ch.close()
    raw.disconnect()
  })
  const got: Revocation[] = []
  const off = ch.subscribe((m) => got.push(m))
  const got2: Revocation[] = []
  ch.subscribe((m) => got2.push(m))
  await ch.ready()
  await raw.publish(ch.channel, '{"v":1,"from":"x","data":{"nope":1}}')
  await raw.publish(ch.channel, '{"v":1,"data":{"jti":"no-from","exp":1}}')
  await raw.publish(ch.channel, 'garbage')
  await raw.publish(ch.channel, '{"v":1,"from":"other-instance","data":{"jti":"ok","exp":2}}')
  await until(() => got.length === 1)
  t.same(got, [{ jti: 'ok', exp: 2 }])
  t.equal(log.entries.filter((e) => e.msg === '@trivium/redis-bus: malformed message ignored').length, 1)
  t.same(log.entries[0]!.obj.reason, 'rejected by validate')
  off()
  await ch.publish({ jti: 'after', exp: 3 })
  await until(() => got2.length === 2)
  t.same(got, [{ jti: 'ok', exp: 2 }], 'the unsubscribed handler got nothing more')
  await t.rejects(ch.publish(undefined as never), { message: '@trivium/redis-bus: message is not JSON' })
})

t.test(
  'one RedisPubSub shared by a bus and several channels: 2 connections, order across them',
  async (t) => {
    const prefix = `${uniq('ch')}:`
    const pubsubA = new RedisPubSub({ redis: REDIS_URL, logger: captureLogger() })
    const pubsubB = new RedisPubSub({ redis: REDIS_URL, logger: captureLogger() })
    t.teardown(() => Promise.all([pubsubA.close(), pubsubB.close()]))
    const busA = new RedisBus({ pubsub: pubsubA, channel: `${prefix}push` })
    const revA = new RedisChannel<string>('revoke', { pubsub: pubsubA, prefix })
    const busB = new RedisBus({ pubsub: pubsubB, channel: `${prefix}push` })
    const revB = new RedisChannel<string>('revoke', { pubsub: pubsubB, prefix })
    const rbacB = new RedisChannel<string>('rbac', { pubsub: pubsubB, prefix })
    const events: string[] = []
    busB.subscribe((e) => events.push(`push:${e.json}`))
    revB.subscribe((m) => events.push(`revoke:${m}`))
    rbacB.subscribe((m) => events.push(`rbac:${m}`))
    await pubsubB.ready()
    await Promise.all([
      revA.publish('j1'),
      busA.publish({ topic: 't', json: '1' }),
      revA.publish('j2'),
      busA.publish({ topic: 't', json: '2' }),
    ])
    await until(() => events.length === 4)
    t.same(events, ['revoke:j1', 'push:1', 'revoke:j2', 'push:2'], 'one publisher: one order')
    // Closing a channel on a shared pair only removes its own subscriptions.
    await revB.close()
    t.equal(pubsubB.connected, true)
    await revA.publish('j3')
    await busA.publish({ topic: 't', json: '3' })
    await until(() => events.length === 5)
    t.same(events.at(-1), 'push:3')
    await t.rejects(revB.publish('x'), { code: 'TRV_REDIS_BUS_UNAVAILABLE' })
  },
)

t.test('publish→receive latency between two connection pairs', async (t) => {
  const prefix = `${uniq('lat')}:`
  // This test measures latency; the 500 ms publish timeout (tested elsewhere) would turn a busy machine's
  // slow burst into a failure.
  const options = { redis: REDIS_URL, prefix, logger: captureLogger(), publishTimeoutMs: 10_000 }
  const a = new RedisChannel<number>('lat', options)
  const b = new RedisChannel<number>('lat', { ...options, logger: captureLogger() })
  t.teardown(() => Promise.all([a.close(), b.close()]))
  let resolveNext: ((n: number) => void) | undefined
  b.subscribe((n) => resolveNext?.(n))
  await Promise.all([a.ready(), b.ready()])
  const samples: number[] = []
  let wrong = 0
  for (let i = 0; i < 1000; i++) {
    const received = new Promise<number>((resolve) => {
      resolveNext = resolve
    })
    const start = performance.now()
    await a.publish(i)
    if ((await received) !== i) wrong++
    samples.push(performance.now() - start)
  }
  t.equal(wrong, 0, 'each message received, in order')
  samples.sort((x, y) => x - y)
  t.comment(
    `sequential publish→receive over ${samples.length}: p50 ${percentile(samples, 50).toFixed(3)} ms, p99 ${percentile(samples, 99).toFixed(3)} ms, max ${samples.at(-1)!.toFixed(3)} ms`,
  )
  // Burst: 5000 unawaited publishes, time until the last is received.
  let count = 0
  const done = new Promise<void>((resolve) => {
    resolveNext = () => {
      if (++count === 5000) resolve()
    }
  })
  const start = performance.now()
  await Promise.all(Array.from({ length: 5000 }, (_, i) => a.publish(i)))
  await done
  const ms = performance.now() - start
  t.comment(`burst: 5000 messages received in ${ms.toFixed(1)} ms (${Math.round(5000 / (ms / 1000))} msg/s)`)
})
