// Issue 17: inject mode leaves nothing behind per call (listeners, timers, retained requests), and a
// tight burst of frames does not starve the event loop's timers.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import triviumCore from '@trivium/core'
import triviumTcp from '@trivium/tcp'
import { Cancellation } from '@trivium/wire'
import Fastify from 'fastify'
import t from 'tap'
import { TcpClient, until } from './helpers.ts'
import { bridgeCall, InjectBridge } from './inject-helpers.ts'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function timers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length
}

function processListeners(): number {
  return process.eventNames().reduce((n, e) => n + process.listenerCount(e), 0)
}

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
  }
  return process.memoryUsage().heapUsed
}

t.test('20 000 lean calls: no listeners, timers or heap left behind', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  const bridge = new InjectBridge(app)
  app.addHook('onResponse', (_req, _reply, done) => done())
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body, call) => {
    void call.signal // makes core's lazy signal (a `close` listener on the response)
    return body
  })
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({ hello: 'world' }))
  await app.ready()
  t.teardown(() => app.close())
  const run = async (n: number) => {
    for (let i = 0; i < n; i += 100) {
      const batch: Promise<unknown>[] = []
      for (let j = 0; j < 100; j++) {
        const cancelled = j % 10 === 0 ? new Cancellation(false) : undefined
        batch.push(bridgeCall(bridge, app, j % 2 ? 'hello' : 'echo', j % 2 ? undefined : { i, j }, cancelled))
        cancelled?.abort(new Error('cancelled'))
      }
      await Promise.all(batch)
    }
  }
  await run(2_000) // warm-up: compiled code, caches
  await new Promise((r) => setTimeout(r, 20))
  const before = {
    timers: timers(),
    listeners: processListeners(),
    server: app.server.listenerCount('request'),
  }
  const heapBefore = await heapAfterGc()
  await run(20_000)
  await until(
    () => timers() === before.timers && processListeners() === before.listeners,
    'timers and listeners back to the count before the calls',
  )
  const heapAfter = await heapAfterGc()
  t.same(
    { timers: timers(), listeners: processListeners(), server: app.server.listenerCount('request') },
    before,
    'no timer or listener added by the calls',
  )
  t.ok(heapAfter - heapBefore < 4 * 1024 * 1024, `heap grew by ${heapAfter - heapBefore} bytes (< 4 MiB)`)
})

t.test('a tight burst over TCP does not starve timers', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(triviumCore)
  await app.register(triviumTcp, { port: 0, mode: 'inject', maxInFlight: 64 })
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, () => ({ hello: 'world' }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const port = app.triviumTcp.address()?.port as number
  const { requestFrame } = await import('./helpers.ts')
  const clients = await Promise.all(Array.from({ length: 8 }, () => TcpClient.open(port)))
  t.teardown(() => {
    for (const c of clients) c.socket.destroy()
  })
  const burst = Buffer.concat(Array.from({ length: 64 }, (_, i) => requestFrame(i + 1, 'hello', {})))
  // The load refills on socket data only (no timer), so starved timers would not slow it down: the
  // interval must keep firing *while* answers are still coming in.
  const bursts = 30
  const total = clients.length * bursts * 64
  let answered = 0
  const during: number[] = [] // answers so far, at each run of the interval
  const interval = setInterval(() => during.push(answered), 5)
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          let sent = 1
          let seen = 0
          c.socket.on('data', () => {
            answered += c.frames.length - seen
            seen = c.frames.length
            if (seen < sent * 64) return
            if (sent === bursts) resolve()
            else {
              sent++
              c.write(burst)
            }
          })
          c.write(burst)
        }),
    ),
  )
  clearInterval(interval)
  t.equal(answered, total, `${total} answers`)
  const midway = during.filter((n) => n > 0 && n < total).length
  t.ok(midway >= 3, `the 5 ms interval ran ${midway} times while the burst was being answered`)
})
