// Fan-out (issue 42): one task event delivered to many `tasks.watch` subscribers. One demo instance per
// transport, count and tree (pinned to CPU 0 once started; this process holds the subscribers). N sessions
// (raw WebSocket or TCP), each with one `tasks.watch` stream; `tasks.create` calls (HTTP) until every
// stream delivered one show that every stream is live, then FANOUT_EVENTS creates one after another, each
// once the previous event reached every subscriber. For each: the time from the create's 201 to each
// delivery (a delivery before the 201 reads negative); p50/p99/max over all deliveries and the
// median over events of the last delivery; the server's CPU time per event (/proc, user + system).
// Memory: the server's heap after GC and RSS with the N sessions open and idle, then with the N streams
// open; per subscriber = the difference / N.
//
//   npx pnpm build && node bench/fanout/run.mjs
//   env: FANOUT_COUNTS=2000,10000  FANOUT_TRANSPORTS=websocket,tcp  FANOUT_EVENTS=10
//        BENCH_BEFORE=<another checkout, built>: measured the same way, before this one
import { FrameType, inBatches, kib, openSession, post, startDemo, trees, waitFor } from '../lib/sessions.mjs'

const COUNTS = (process.env.FANOUT_COUNTS ?? '2000,10000').split(',').map(Number)
const TRANSPORTS = (process.env.FANOUT_TRANSPORTS ?? 'websocket,tcp').split(',')
const EVENTS = Number(process.env.FANOUT_EVENTS ?? 10)
const WATCH_ID = 2
let retried = 0
let watchRetries = 0
let watchesPending = 0

async function measure(tree, transport, count) {
  const demo = await startDemo(tree.dir)
  const sessions = []
  try {
    const token = await demo.login()
    /** Per session: responses to `auth.me`, stream items received, and when the last one came. */
    const answers = new Uint32Array(count)
    const items = new Uint32Array(count)
    const arrived = new Float64Array(count)
    let unexpected = 0
    const base = await demo.memory()
    await inBatches(0, count, 64, async (i) => {
      sessions[i] = await openSession(transport, demo, token, i, (type, id) => {
        if (type === FrameType.STREAM_ITEM && id === WATCH_ID) {
          items[i]++
          arrived[i] = performance.now()
        } else if (type === FrameType.RESPONSE) answers[i]++
        else if (type === FrameType.ERROR && id === WATCH_ID) {
          // Refused at its start (a 503 while thousands start at once): asked again, and counted.
          watchRetries++
          watchesPending++
          setTimeout(() => {
            watchesPending--
            sessions[i].request(WATCH_ID, 'tasks.watch')
          }, 250)
        } else unexpected++
      })
      sessions[i].request(1, 'auth.me') // authenticates a TCP session; the same call on WebSocket
    })
    await waitFor(() => sum(answers) >= count, 120_000, 'every session authenticated')
    const plain = await demo.memory()
    for (const s of sessions) s.request(WATCH_ID, 'tasks.watch')
    // Creates until every stream has delivered one (a stream asked again after a refusal starts late).
    for (let warm = 0; !every(items, 1); warm++) {
      if (warm === 60)
        throw new Error(`streams still not live: ${items.filter((n) => n > 0).length}/${count}`)
      await create(demo, token, -1)
      await waitFor(() => every(items, 1), 5_000, 'live streams').catch(() => {})
    }
    await waitFor(() => watchesPending === 0, 10_000, 'streams asked again').catch(() => {})
    const deliveries = []
    const lasts = []
    const before = Uint32Array.from(items)
    const cpuBefore = demo.cpuMs()
    for (let e = 1; e <= EVENTS; e++) {
      await create(demo, token, e)
      const created = performance.now()
      await waitFor(() => items.every((n, i) => n >= before[i] + e), 120_000, `event ${e} to ${count}`)
      let last = Number.NEGATIVE_INFINITY
      for (let i = 0; i < count; i++) {
        deliveries.push(arrived[i] - created)
        last = Math.max(last, arrived[i] - created)
      }
      lasts.push(last)
    }
    // Server CPU per event: the create over HTTP, its outbox relay and the delivery to every stream
    // (what the wall-clock figures cost without the other processes' share of the CPU).
    const cpuPerEvent = (demo.cpuMs() - cpuBefore) / EVENTS
    const subscribed = await demo.memory()
    if (unexpected > 0) process.exitCode = 1
    deliveries.sort((a, b) => a - b)
    lasts.sort((a, b) => a - b)
    return {
      tree: tree.label,
      transport,
      subscribers: count,
      'p50 ms': pick(deliveries, 0.5).toFixed(1),
      'p99 ms': pick(deliveries, 0.99).toFixed(1),
      'max ms': deliveries.at(-1).toFixed(1),
      'last (median) ms': pick(lasts, 0.5).toFixed(1),
      'server CPU ms/event': cpuPerEvent.toFixed(1),
      'session KiB heap/RSS': `${kib((plain.heap - base.heap) / count)} / ${kib((plain.rss - base.rss) / count)}`,
      'subscription KiB heap/RSS': `${kib((subscribed.heap - plain.heap) / count)} / ${kib((subscribed.rss - plain.rss) / count)}`,
      unexpected,
    }
  } finally {
    for (const s of sessions) s?.close()
    await demo.stop()
  }
}

/** A `tasks.create` over HTTP; a 503 (the pool busy with the streams' start) is tried again, and counted. */
async function create(demo, token, e) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await post(demo.base, '/tasks', { title: `fanout ${e}` }, token)
    } catch (err) {
      if (!/: 503 /.test(err.message) || attempt === 20) throw err
      retried++
      await new Promise((r) => setTimeout(r, 250))
    }
  }
}

function sum(array) {
  let n = 0
  for (const v of array) n += v
  return n
}

function every(array, atLeast) {
  for (const v of array) if (v < atLeast) return false
  return true
}

function pick(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

const rows = []
for (const transport of TRANSPORTS)
  for (const count of COUNTS) for (const tree of trees()) rows.push(await measure(tree, transport, count))
console.log(
  `fanout: ${EVENTS} task events (HTTP creates, one at a time) to N tasks.watch streams; delivery = time after the create's 201`,
)
console.table(rows)
if (retried + watchRetries > 0)
  console.log(
    `tried again: ${retried} creates answered 503, ${watchRetries} tasks.watch refused at their start`,
  )
