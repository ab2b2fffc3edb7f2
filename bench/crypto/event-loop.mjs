// Event-loop delay during 20 concurrent password hashes (a burst of logins): @trivium/crypto's worker
// pool (default, workers at nice +10 on Linux), the same pool with `workerNice: 0` (workers at the
// process's priority, as before 0.1.x's priority change), and bcryptjs's async hash on the main thread.
// Rounds interleaved, medians over rounds, ratios against the main-thread baseline of the same run.
//
// perf_hooks.monitorEventLoopDelay records the time between two runs of its interval timer, so every
// sample includes the `resolution` itself (an idle loop reads ≈ 10 ms at resolution 10). The "delay"
// columns subtract the interval: they are how late the timer ran, i.e. how long the event loop could not
// run. The "p99/max incl. interval" columns are the raw figures older versions of this bench printed.
// On Linux the run-queue column is the main thread's own scheduler statistics (/proc/…/schedstat): time
// spent runnable but waiting for a core, per time it was scheduled in.
//   node bench/crypto/event-loop.mjs            (after building packages/crypto)
//   ROUNDS=5 RESOLUTION=1 node bench/crypto/event-loop.mjs
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const crypto = await import(new URL('../../packages/crypto/dist/index.js', import.meta.url).href)
const { default: bcrypt } = await import(
  new URL('../../packages/crypto/node_modules/bcryptjs/index.js', import.meta.url).href
)

const CONCURRENT = 20
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const RESOLUTION = Number(process.env.RESOLUTION ?? 10)
const COST = crypto.BCRYPT_COST
const POOL = crypto.defaultPoolSize()

const hashInPool = () => crypto.hashPassword('Correct-horse1!')
/** Restarts the pool with `workerNice` and starts every worker before the measurement. */
const poolWith = (workerNice) => async () => {
  await crypto.shutdownPasswordWorkers()
  crypto.configurePasswordWorkers({ workerNice })
  await Promise.all(Array.from({ length: POOL }, () => crypto.hashPassword('warm')))
}

const modes = {
  [`worker pool (nice +${crypto.DEFAULT_WORKER_NICE})`]: {
    setup: poolWith(crypto.DEFAULT_WORKER_NICE),
    run: hashInPool,
  },
  'worker pool (workerNice 0)': { setup: poolWith(0), run: hashInPool },
  'main thread (bcryptjs async)': { setup: async () => {}, run: () => bcrypt.hash('Correct-horse1!', COST) },
}

/** [ns runnable-and-running, ns runnable-but-waiting, times scheduled in] of the main thread, or undefined. */
function schedstat() {
  try {
    return readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').trim().split(' ').map(Number)
  } catch {
    return undefined
  }
}

async function measure(run) {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION })
  const start = performance.now()
  const before = schedstat()
  h.enable()
  await Promise.all(Array.from({ length: CONCURRENT }, run))
  h.disable()
  const after = schedstat()
  const ms = (ns) => ns / 1e6
  const delay = (ns) => Math.max(0, ms(ns) - RESOLUTION)
  return {
    'p50 delay': delay(h.percentile(50)),
    'p99 delay': delay(h.percentile(99)),
    'max delay': delay(h.max),
    'p99 incl. interval': ms(h.percentile(99)),
    'max incl. interval': ms(h.max),
    'runq µs/wake':
      before && after && after[2] > before[2]
        ? (after[1] - before[1]) / 1e3 / (after[2] - before[2])
        : Number.NaN,
    wall: performance.now() - start,
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

// Warm-up: start the workers and JIT both paths.
await Promise.all(Array.from({ length: POOL }, () => crypto.hashPassword('warm')))
await bcrypt.hash('warm', 4)

const results = Object.fromEntries(Object.keys(modes).map((k) => [k, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, { setup, run }] of Object.entries(modes)) {
    await setup()
    results[name].push(await measure(run))
  }
}

console.log(
  `event-loop delay during ${CONCURRENT} concurrent bcrypt cost-${COST} hashes, median of ${ROUNDS} rounds (pool size ${POOL}, monitorEventLoopDelay resolution ${RESOLUTION} ms; "delay" = beyond the interval, in ms)`,
)
const rows = {}
for (const [name, rs] of Object.entries(results)) {
  rows[name] = Object.fromEntries(
    Object.keys(rs[0]).map((k) => [
      k === 'runq µs/wake' ? k : `${k} ms`,
      Number(median(rs.map((r) => r[k])).toFixed(k === 'runq µs/wake' ? 0 : 1)),
    ]),
  )
}
console.table(rows)
const base = rows['main thread (bcryptjs async)']
for (const name of Object.keys(modes).slice(0, 2)) {
  const pool = rows[name]
  console.log(
    `ratio ${name}/main: p99 delay ${(pool['p99 delay ms'] / base['p99 delay ms']).toFixed(4)}, max delay ${(pool['max delay ms'] / base['max delay ms']).toFixed(4)}, p99 incl. interval ${(pool['p99 incl. interval ms'] / base['p99 incl. interval ms']).toFixed(3)}, wall ${(pool['wall ms'] / base['wall ms']).toFixed(2)}`,
  )
}
await crypto.shutdownPasswordWorkers()
