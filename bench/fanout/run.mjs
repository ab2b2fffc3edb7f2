// Fan-out (issue 42): one task event delivered to many `tasks.watch` subscribers. One demo instance per
// transport, count and tree (pinned to CPU 0 once started; this process holds the subscribers). N sessions
// (raw WebSocket or TCP), each with one `tasks.watch` stream; `tasks.create` calls (HTTP) until every
// stream delivered one show that every stream is live, then FANOUT_EVENTS creates one after another, each
// once the previous event reached every subscriber. For each: the time from the create's 201 to each
// delivery (a delivery before the 201 reads negative); p50/p99/max over all deliveries and the
// median over events of the last delivery; the server's CPU time per event (/proc, user + system).
// Memory: the server's heap after GC and RSS with the N sessions open and idle, then with the N streams
// open; per subscriber = the difference / N.
// The floor (`raw` rows, FANOUT_RAW=0 leaves them out): raw-server.mjs, a plain `ws` / `net` server that
// sends the same frame bytes (the body a `now` run delivered) to the same N clients on a POST, measured
// the same way (time from its 201 to each arrival, its CPU per event); printed as Trivium ÷ raw.
// Per event, the last delivery and the create's own round trip are printed in order, and the server's
// garbage collections during the events (bench/lib/gc-probe.mjs's window); BENCH_CPU_PROFILE_DIR=<dir>
// also writes a CPU profile of each server over the events (bench/lib/profile-summary.mjs reads it).
//
//   npx pnpm build && node bench/fanout/run.mjs
//   env: FANOUT_COUNTS=2000,10000  FANOUT_TRANSPORTS=websocket,tcp  FANOUT_EVENTS=10
//        BENCH_BEFORE=<another checkout, built>: measured the same way, before this one
//        BENCH_ALLOC=1: bytes the server allocates per delivery over the events (bench/lib/gc-probe.mjs;
//        slows the server, so its latency figures are not comparable with a run without it)
import { loadavg } from 'node:os'
import {
  FrameType,
  inBatches,
  kib,
  openSession,
  post,
  startDemo,
  startServer,
  trees,
  waitFor,
} from '../lib/sessions.mjs'

const COUNTS = (process.env.FANOUT_COUNTS ?? '2000,10000').split(',').map(Number)
const TRANSPORTS = (process.env.FANOUT_TRANSPORTS ?? 'websocket,tcp').split(',')
const EVENTS = Number(process.env.FANOUT_EVENTS ?? 10)
const WATCH_ID = 2
let retried = 0
let watchRetries = 0
let watchesPending = 0
/** The body of a delivered `tasks.watch` item (a `now` run's), which the raw server sends too. */
let sampleBody = Buffer.from('{"kind":"created"}')

async function measure(tree, transport, count) {
  const demo = tree.raw ? await startRaw() : await startDemo(tree.dir)
  const sessions = []
  try {
    const token = tree.raw ? 'raw' : await demo.login()
    /** Per session: responses to `auth.me`, stream items received, and when the last one came. */
    const answers = new Uint32Array(count)
    const items = new Uint32Array(count)
    const arrived = new Float64Array(count)
    let unexpected = 0
    const base = await demo.memory()
    await inBatches(0, count, 64, async (i) => {
      sessions[i] = await openSession(transport, demo, token, i, (type, id, frame) => {
        if (type === FrameType.STREAM_ITEM && id === WATCH_ID) {
          items[i]++
          arrived[i] = performance.now()
          if (i === 0 && tree.label === 'now') sampleBody = Buffer.from(frame.subarray(5))
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
    const creates = []
    /** Each event's span (epoch ms): from its create's request to its last delivery. */
    const spans = []
    const before = Uint32Array.from(items)
    const window = await demo.window()
    const cpuBefore = demo.cpuMs()
    for (let e = 1; e <= EVENTS; e++) {
      const asked = performance.now()
      await create(demo, token, e)
      const created = performance.now()
      creates.push(created - asked)
      await waitFor(() => items.every((n, i) => n >= before[i] + e), 120_000, `event ${e} to ${count}`)
      let last = Number.NEGATIVE_INFINITY
      for (let i = 0; i < count; i++) {
        deliveries.push(arrived[i] - created)
        last = Math.max(last, arrived[i] - created)
      }
      lasts.push(last)
      spans.push([performance.timeOrigin + asked, performance.timeOrigin + created + last])
    }
    // Server CPU per event: the create over HTTP, its outbox relay and the delivery to every stream
    // (what the wall-clock figures cost without the other processes' share of the CPU).
    const cpuPerEvent = (demo.cpuMs() - cpuBefore) / EVENTS
    const { gc, profile, alloc } = await window.close()
    const order = (list) => list.map((ms) => ms.toFixed(0)).join(' ')
    // The server's GC pauses within each event's span (a pause between events delays none).
    const gcByEvent = spans.map(([from, to]) =>
      gc.pauses.filter((p) => p.at + p.ms > from && p.at < to).reduce((a, p) => a + p.ms, 0),
    )
    perEvent.push(
      `${tree.label} ${transport} ${count}: last ${order(lasts)} ms; create ${order(creates)} ms; ` +
        `GC pauses within each ${order(gcByEvent)} ms; ` +
        `GC during the events: ${gc.count} (${gc.major} full), ${gc.ms} ms, longest ${gc.maxMs} ms` +
        (profile ? `; profile ${profile}` : ''),
    )
    const subscribed = await demo.memory()
    if (unexpected > 0) process.exitCode = 1
    deliveries.sort((a, b) => a - b)
    const lastMedian = pick(
      [...lasts].sort((a, b) => a - b),
      0.5,
    )
    return {
      tree: tree.label,
      transport,
      subscribers: count,
      'p50 ms': pick(deliveries, 0.5).toFixed(1),
      'p99 ms': pick(deliveries, 0.99).toFixed(1),
      'max ms': deliveries.at(-1).toFixed(1),
      'last (median) ms': lastMedian.toFixed(1),
      'server CPU ms/event': cpuPerEvent.toFixed(1),
      // Load-independent: collections (mostly scavenges) and, with BENCH_ALLOC=1, bytes allocated.
      'GCs/event': (gc.count / EVENTS).toFixed(1),
      ...(alloc === undefined ? {} : { 'alloc B/delivery': (alloc / EVENTS / count).toFixed(0) }),
      'session KiB heap/RSS': `${kib((plain.heap - base.heap) / count)} / ${kib((plain.rss - base.rss) / count)}`,
      'subscription KiB heap/RSS': `${kib((subscribed.heap - plain.heap) / count)} / ${kib((subscribed.rss - plain.rss) / count)}`,
      unexpected,
    }
  } finally {
    for (const s of sessions) s?.close()
    await demo.stop()
  }
}

/** The floor's server (raw-server.mjs), sending the body a `now` run delivered. */
async function startRaw() {
  const script = new URL('raw-server.mjs', import.meta.url).pathname
  const server = await startServer(script, { RAW_PAYLOAD_B64: sampleBody.toString('base64') })
  return { ...server, base: `http://127.0.0.1:${server.http}` }
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

/** Each tree's figures over the raw server's of the same transport and count. */
function ratios(rows) {
  const out = []
  for (const row of rows) {
    const raw = rows.find(
      (r) => r.tree === 'raw' && r.transport === row.transport && r.subscribers === row.subscribers,
    )
    if (raw === undefined || row === raw) continue
    const ratio = (key) => (Number(row[key]) / Number(raw[key])).toFixed(2)
    out.push({
      tree: row.tree,
      transport: row.transport,
      subscribers: row.subscribers,
      'p50 ÷ raw': ratio('p50 ms'),
      'p99 ÷ raw': ratio('p99 ms'),
      'last (median) ÷ raw': ratio('last (median) ms'),
      'server CPU/event ÷ raw': ratio('server CPU ms/event'),
    })
  }
  return out
}

const rows = []
const perEvent = []
const measured = process.env.FANOUT_RAW === '0' ? trees() : [...trees(), { label: 'raw', raw: true }]
for (const transport of TRANSPORTS)
  for (const count of COUNTS) for (const tree of measured) rows.push(await measure(tree, transport, count))
console.log(
  `load average at the end: ${loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}`,
)
console.log(
  `fanout: ${EVENTS} task events (HTTP creates, one at a time) to N tasks.watch streams; delivery = time after the create's 201`,
)
console.table(rows)
console.table(ratios(rows))
console.log('per event, in order:')
for (const line of perEvent) console.log(`  ${line}`)
if (retried + watchRetries > 0)
  console.log(
    `tried again: ${retried} creates answered 503, ${watchRetries} tasks.watch refused at their start`,
  )
