// Event-loop delay during 20 concurrent password hashes (a burst of logins): @trivium/crypto's worker
// pool vs bcryptjs's async hash on the main thread. perf_hooks.monitorEventLoopDelay, 10 ms resolution;
// rounds interleaved, medians over rounds, ratio against the main-thread baseline measured in the same run.
//   node bench/crypto/event-loop.mjs            (after building packages/crypto)
import { monitorEventLoopDelay } from 'node:perf_hooks'

const crypto = await import(new URL('../../packages/crypto/dist/index.js', import.meta.url).href)
const { default: bcrypt } = await import(
  new URL('../../packages/crypto/node_modules/bcryptjs/index.js', import.meta.url).href
)

const CONCURRENT = 20
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const COST = crypto.BCRYPT_COST

const modes = {
  'worker pool': () => crypto.hashPassword('Correct-horse1!'),
  'main thread (bcryptjs async)': () => bcrypt.hash('Correct-horse1!', COST),
}

async function measure(run) {
  const h = monitorEventLoopDelay({ resolution: 10 })
  const start = performance.now()
  h.enable()
  await Promise.all(Array.from({ length: CONCURRENT }, run))
  h.disable()
  const ms = (ns) => ns / 1e6
  return {
    p50: ms(h.percentile(50)),
    p99: ms(h.percentile(99)),
    max: ms(h.max),
    wall: performance.now() - start,
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

// Warm-up: start the workers and JIT both paths.
await Promise.all([crypto.hashPassword('warm'), crypto.hashPassword('warm')])
await bcrypt.hash('warm', 4)

const results = Object.fromEntries(Object.keys(modes).map((k) => [k, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(modes)) results[name].push(await measure(run))
}

console.log(
  `event-loop delay during ${CONCURRENT} concurrent bcrypt cost-${COST} hashes, median of ${ROUNDS} rounds (pool size ${crypto.defaultPoolSize()})`,
)
const rows = {}
for (const [name, rs] of Object.entries(results)) {
  rows[name] = Object.fromEntries(
    ['p50', 'p99', 'max', 'wall'].map((k) => [`${k} ms`, Number(median(rs.map((r) => r[k])).toFixed(1))]),
  )
}
console.table(rows)
const base = rows['main thread (bcryptjs async)']
const pool = rows['worker pool']
console.log(
  `ratio pool/main: p99 ${(pool['p99 ms'] / base['p99 ms']).toFixed(3)}, max ${(pool['max ms'] / base['max ms']).toFixed(3)}, wall ${(pool['wall ms'] / base['wall ms']).toFixed(2)}`,
)
await crypto.shutdownPasswordWorkers()
