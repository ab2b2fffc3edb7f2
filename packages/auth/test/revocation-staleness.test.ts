// Issue 30.4: "a subscription that dies without the connection being reset is distrusted after at most
// maxSilenceMs" (PROTOCOL.md "Revocation window"). The mirror checks the age of the last heartbeat that
// came back on every lookup, not only on its heartbeat tick, so the bound holds at every heartbeat phase.
// A private redis-server; the subscription goes through a proxy that holds the bytes (no reset).
import { RedisRevocationStore } from '@trivium/auth'
import { RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import { Redis } from 'ioredis'
import t from 'tap'
import { freePort, holdingProxy, startRedis } from './redis-process.js'

t.test(
  'a silent subscription is distrusted no later than maxSilenceMs, at any heartbeat phase',
  async (t) => {
    const port = await freePort()
    const redisProc = await startRedis(port)
    t.teardown(() => {
      redisProc.kill('SIGKILL')
    })
    const proxy = await holdingProxy(port)
    t.teardown(() => proxy.close())
    const client = new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false })
    client.on('error', () => {})
    const pubsub = new RedisPubSub({
      redis: `redis://127.0.0.1:${proxy.port}`,
      logger: { info() {}, warn() {}, error() {} },
      retryMaxDelayMs: 50,
    })
    const heartbeatMs = 100
    const maxSilenceMs = 400
    const store = new RedisRevocationStore({
      client,
      prefix: 'staleness:',
      commandTimeoutMs: 500,
      mirror: { channel: new RedisChannel('revocation-list', { pubsub }), heartbeatMs, maxSilenceMs },
    })
    t.teardown(async () => {
      await store.close()
      await pubsub.close()
      client.disconnect()
    })
    // Lookups that reach Redis (EXISTS); one answered from the mirror sends nothing.
    let exists = 0
    const send = client.sendCommand.bind(client)
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      if (command.name === 'exists') exists++
      return (send as (...a: unknown[]) => unknown)(command, ...rest)
    }) as typeof client.sendCommand

    const rounds = 8
    const late: number[] = []
    for (let round = 0; round < rounds; round++) {
      await store.mirrorReady(10_000)
      // A random phase of the heartbeat.
      await new Promise((r) => setTimeout(r, Math.random() * 2 * heartbeatMs))
      proxy.hold()
      const heldAt = Date.now()
      // Every lookup until well past the bound; the last one answered from memory is when the mirror last
      // trusted itself (read on the store's clock just before the call: the decision is taken after it).
      let lastFromMemory = Number.NEGATIVE_INFINITY
      let listed = 0
      while (Date.now() <= heldAt + maxSilenceMs + 200) {
        const startedAt = Date.now()
        const before = exists
        if (await store.contains('nobody')) listed++
        if (exists === before) lastFromMemory = startedAt
        await new Promise((r) => setImmediate(r))
      }
      t.equal(listed, 0, `round ${round}: every lookup answered`)
      late.push(lastFromMemory - heldAt)
      t.ok(
        lastFromMemory <= heldAt + maxSilenceMs,
        `round ${round}: answered from memory until ${lastFromMemory - heldAt} ms after the hold (max ${maxSilenceMs})`,
      )
      t.not(store.mirrorState, 'on', `round ${round}: the mirror is distrusted`)
      proxy.release()
    }
    t.comment(`last answer from memory after the hold: ${late.join(', ')} ms (maxSilenceMs ${maxSilenceMs})`)
  },
)
