// Redis going away and coming back, on a private redis-server (own port) so the shared Redis is never
// disturbed: publishes fail fast with a typed error, one log line per outage, subscriptions come back
// by themselves, and close() leaves nothing open (tap would time out on a live handle).
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { performance } from 'node:perf_hooks'
import { RedisBus, RedisBusUnavailableError, RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { SessionHub } from '@trivium/wire/sessions'
import t from 'tap'
import { captureLogger, fakeSession, until } from './helpers.js'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

class PrivateRedis {
  #child: ChildProcess | undefined
  constructor(readonly port: number) {}
  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    this.#child = child
    let out = ''
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes('Ready to accept connections')) resolve()
      })
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)))
    })
    child.stdout!.resume()
  }
  async stop(): Promise<void> {
    const child = this.#child
    this.#child = undefined
    if (!child || child.exitCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGKILL')
    await exited
  }
}

const isUnavailable = (err: unknown) =>
  err instanceof RedisBusUnavailableError && (err as { code?: string }).code === 'TRV_REDIS_BUS_UNAVAILABLE'

t.test('Redis never reachable: publishes reject with the typed error, logged once', async (t) => {
  const log = captureLogger()
  const ch = new RedisChannel<number>('x', {
    redis: `redis://127.0.0.1:${await freePort()}`,
    logger: log,
    publishTimeoutMs: 300,
  })
  ch.subscribe(() => {})
  const first = await ch.publish(1).catch((e: unknown) => e)
  t.ok(isUnavailable(first), 'first publish rejects')
  t.match((first as Error).message, /^@trivium\/redis-bus: Redis unavailable: connection failed/)
  const times: number[] = []
  for (let i = 0; i < 50; i++) {
    const start = performance.now()
    const err = await ch.publish(i).catch((e: unknown) => e)
    times.push(performance.now() - start)
    if (!isUnavailable(err)) t.fail(`publish ${i} did not reject with RedisBusUnavailableError`)
  }
  t.comment(
    `first rejection: ${(first as Error).message}; next 50 rejected in max ${Math.max(...times).toFixed(2)} ms each`,
  )
  await new Promise((r) => setTimeout(r, 300)) // a few reconnect attempts
  t.equal(log.entries.filter((e) => e.level === 'warn').length, 1, 'one warning for the outage')
  t.match(log.entries[0]!.msg, /Redis unreachable/)
  const notReady = await ch.ready(200).catch((e: unknown) => e)
  t.ok(isUnavailable(notReady), 'ready() rejects after its timeout')
  await ch.close()
})

t.test('Redis stopped and restarted: fail fast, log once, resubscribe, deliver after recovery', async (t) => {
  const redis = new PrivateRedis(await freePort())
  await redis.start()
  t.teardown(() => redis.stop())
  const logA = captureLogger()
  const logB = captureLogger()
  const pubsubA = new RedisPubSub({ redis: redis.url, logger: logA })
  const pubsubB = new RedisPubSub({ redis: redis.url, logger: logB })
  t.teardown(() => Promise.all([pubsubA.close(), pubsubB.close()]))
  const hubA = new SessionHub(new RedisBus({ pubsub: pubsubA }))
  const hubB = new SessionHub(new RedisBus({ pubsub: pubsubB }))
  const revA = new RedisChannel<string>('revoke', { pubsub: pubsubA })
  const revB = new RedisChannel<string>('revoke', { pubsub: pubsubB })
  const b = fakeSession('b')
  hubB.add(b.session)
  hubB.subscribe(b.session, 'news')
  const revoked: string[] = []
  revB.subscribe((jti) => revoked.push(jti))
  let resubscribedB = 0
  revB.onResubscribed(() => resubscribedB++)
  let lostB = 0
  revB.onSubscriptionLost(() => lostB++)
  t.equal(revB.subscribed, false, 'not subscribed before Redis acknowledged it')
  await Promise.all([pubsubA.ready(), pubsubB.ready()])
  t.equal(revB.subscribed, true, 'subscribed once acknowledged')

  await hubA.toTopic('news', 'before')
  await revA.publish('j-before')
  await until(() => b.got.length === 1 && revoked.length === 1)

  await redis.stop()
  await until(() => !pubsubA.connected && !pubsubB.connected, 5000, 'clients to notice')
  t.equal(lostB, 1, 'onSubscriptionLost fired once when the connection was lost')
  t.equal(revB.subscribed, false, 'not subscribed during the outage')
  let rejected = 0
  let slowest = 0
  for (let i = 0; i < 100; i++) {
    const start = performance.now()
    for (const p of [hubA.toTopic('news', i), revA.publish(`j${i}`)]) {
      if (isUnavailable(await p.catch((e: unknown) => e))) rejected++
    }
    slowest = Math.max(slowest, performance.now() - start)
  }
  t.equal(rejected, 200, 'every publish during the outage rejected with TRV_REDIS_BUS_UNAVAILABLE')
  t.comment(`during the outage: slowest rejection pair ${slowest.toFixed(2)} ms`)
  const warns = (log: typeof logA) => log.entries.filter((e) => e.level === 'warn').length
  await until(() => warns(logA) === 1 && warns(logB) === 1, 10_000, 'the outage warnings')
  await new Promise((r) => setTimeout(r, 500)) // several reconnect attempts: none may warn again
  const warnsA = logA.entries.filter((e) => e.level === 'warn')
  t.equal(warnsA.length, 1, 'one warning per outage, not per message or per reconnect attempt')
  t.equal(logB.entries.filter((e) => e.level === 'warn').length, 1)

  const restartedAt = performance.now()
  await redis.start()
  await until(() => resubscribedB === 1, 10_000, 'resubscription on B')
  t.equal(revB.subscribed, true, 'subscribed again when onResubscribed fires')
  t.equal(lostB, 1, 'reconnect attempts during the outage are not further losses')
  t.comment(`restart → B resubscribed in ${(performance.now() - restartedAt).toFixed(0)} ms`)
  await until(() => pubsubA.connected, 10_000, 'A back')
  await hubA.toTopic('news', 'after')
  await revA.publish('j-after')
  await until(() => b.got.length === 2 && revoked.length === 2, 5000, 'messages after recovery')
  t.same(b.got, [
    ['news', 'before'],
    ['news', 'after'],
  ])
  t.same(revoked, ['j-before', 'j-after'], 'nothing from the outage arrives later (no replay)')
  t.equal(logA.entries.filter((e) => e.level === 'info' && /reachable again/.test(e.msg)).length, 1)
  t.ok(typeof logA.entries.find((e) => e.level === 'info')!.obj.downMs === 'number')

  // A second outage is logged again (once).
  await redis.stop()
  await until(() => !pubsubA.connected)
  t.ok(isUnavailable(await revA.publish('x').catch((e: unknown) => e)))
  await until(() => warns(logA) >= 2, 10_000, 'the second outage warning')
  await new Promise((r) => setTimeout(r, 200)) // reconnect attempts: none may warn again
  t.equal(logA.entries.filter((e) => e.level === 'warn').length, 2)
  // close() while Redis is down: resolves, nothing left open.
  const start = performance.now()
  await Promise.all([pubsubA.close(), pubsubB.close()])
  t.comment(`close during outage took ${(performance.now() - start).toFixed(1)} ms`)
  hubA.close()
  hubB.close()
})
