// Issue 44: a long-lived stream holds constant memory whatever it delivers (PROTOCOL.md "Streams hold
// constant memory"). Before, each item was awaited with `Promise.race([next, stop])`, `stop` a promise
// pending for the stream's life, which kept one reaction per item delivered (~360 B) until the stream
// ended: on WebSocket, TCP (direct and inject) and SSE, and again through the deadline's own race. Here
// one stream per transport delivers 10,000 items in batches, waiting between them as `tasks.watch` waits
// between events; heap after GC at 1,000 and at 10,000 items.
import { request as httpRequest } from 'node:http'
import type { TriviumCall } from '@trivium/core'
import { FrameType } from '@trivium/wire'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { heapAfterGc } from '../../../scripts/test/heap.ts'
import { CARRIAGES, type RawApp, RawClient, rawApp, request, until } from './raw-frames.ts'

const BATCH = 1_000
const ITEMS = 10_000
/**
 * Bytes per item the heap may grow by between 1,000 and 10,000 items. Measured here before the fix: 673–861
 * B per item, 1,639–1,679 with the deadline (two races per item); after: -21 to +35 (the collector's noise).
 */
const BOUND = 128

/** Items the `feed` streams may still send; they wait (on nothing per item) while there are none. */
class Budget {
  left = 0
  #wake: (() => void) | undefined
  release(n: number): void {
    this.left += n
    this.#wake?.()
  }
  wait(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.#wake = undefined
        signal.removeEventListener('abort', done)
        resolve()
      }
      this.#wake = done
      signal.addEventListener('abort', done, { once: true })
    })
  }
}

function feedEndpoints(budget: Budget) {
  return (app: FastifyInstance): void => {
    async function* feed(_req: unknown, call: TriviumCall) {
      for (let i = 0; !call.signal.aborted; ) {
        if (budget.left === 0) {
          await budget.wait(call.signal)
          continue
        }
        budget.left--
        yield { i: i++ }
      }
    }
    app.trivium.stream('feed', { method: 'GET', url: '/feed' }, feed)
    // The same with a deadline (ten minutes): each item also waits through the deadline.
    app.trivium.stream('feed.deadline', { method: 'GET', url: '/feed-deadline', timeoutMs: 600_000 }, feed)
  }
}

/**
 * Delivers `ITEMS` in batches through `received()` (items counted by the client, which keeps none) and
 * returns the heap growth per item between the first batch and the last.
 */
async function perItem(budget: Budget, received: () => number, what: string): Promise<number> {
  let heap1k = 0
  for (let sent = 0; sent < ITEMS; ) {
    budget.release(BATCH)
    sent += BATCH
    await until(() => received() >= sent, `${what}: ${sent} items`)
    if (sent === BATCH) heap1k = await heapAfterGc()
  }
  const heap10k = await heapAfterGc()
  return (heap10k - heap1k) / (ITEMS - BATCH)
}

for (const carriage of CARRIAGES) {
  for (const endpoint of ['feed', 'feed.deadline']) {
    t.test(
      `${carriage}: a stream (${endpoint}) holds the same memory after 1,000 and 10,000 items`,
      async (t) => {
        const budget = new Budget()
        const server: RawApp = await rawApp({
          tcp: { mode: carriage === 'tcp-inject' ? 'inject' : 'direct' },
          setup: feedEndpoints(budget),
        })
        t.teardown(() => server.app.close())
        const client = await RawClient.open(carriage, server)
        t.teardown(() => client.close())
        let items = 0
        const count = (): number => {
          // The client keeps no frame: only the count.
          for (const f of client.frames) {
            if (f.type === FrameType.STREAM_ITEM) items++
            else throw new Error(`unexpected frame ${f.type} ${new TextDecoder().decode(f.payload)}`)
          }
          client.frames.length = 0
          return items
        }
        client.write(request(1, endpoint, {}))
        const growth = await perItem(budget, count, carriage)
        t.ok(growth < BOUND, `heap grew ${growth.toFixed(1)} B per item (< ${BOUND})`)
        t.equal(items, ITEMS, 'every item delivered, the stream still open')
      },
    )
  }
}

for (const endpoint of ['feed', 'feed.deadline']) {
  t.test(`SSE: a stream (${endpoint}) holds the same memory after 1,000 and 10,000 items`, async (t) => {
    const budget = new Budget()
    const server = await rawApp({ setup: feedEndpoints(budget) })
    t.teardown(() => server.app.close())
    const { port } = server.app.server.address() as { port: number }
    let items = 0
    let rest = ''
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: endpoint === 'feed' ? '/feed' : '/feed-deadline',
      headers: { accept: 'text/event-stream' },
    })
    t.teardown(() => req.destroy())
    req.on('error', () => {})
    req.on('response', (res) => {
      t.equal(res.statusCode, 200)
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        // Events end with a blank line; only the unfinished one is kept.
        const events = (rest + chunk).split('\n\n')
        rest = events.pop() ?? ''
        for (const e of events) if (e.includes('event: item\n')) items++
      })
    })
    req.end()
    const growth = await perItem(budget, () => items, 'SSE')
    t.ok(growth < BOUND, `heap grew ${growth.toFixed(1)} B per item (< ${BOUND})`)
    t.equal(items, ITEMS, 'every item delivered, the stream still open')
  })
}
