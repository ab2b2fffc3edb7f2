// Connection density (issue 42): how much one idle authenticated session costs the server. One demo
// instance per transport, tree and repetition (PostgreSQL, CPU 0). Each instance first opens and closes
// DENSITY_WARMUP authenticated sessions (JIT, hidden classes, pools and malloc's arenas of a first
// connection are then in the baseline, not in the sessions), waits until their sockets are gone, and
// reads its baseline; sessions are then opened in steps up to each count of DENSITY_COUNTS, each
// authenticated (WebSocket: the token at the upgrade; TCP: its first call carries it) by one `auth.me`
// call, held idle for DENSITY_HOLD_SECONDS, and read again; per session = (figure − baseline) / n. Every
// reading is taken inside the server after full collections and once RSS stopped moving
// (bench/lib/gc-probe.mjs, rss-split.mjs). DENSITY_REPEAT instances of each case, interleaved, give the
// median and the spread (min–max). After the last hold every session is asked again (`auth.me`): all must
// answer (an ERROR, e.g. a 503 from a busy database pool, is an answer, counted apart), or the run exits 1.
//
//   npx pnpm build && node bench/density/run.mjs
//   env: DENSITY_COUNTS=1000,5000,10000  DENSITY_TRANSPORTS=websocket,tcp  DENSITY_HOLD_SECONDS=10
//        DENSITY_REPEAT=3  DENSITY_WARMUP=500
//        BENCH_BEFORE=<another checkout, built>: measured the same way, beside this one
//        DENSITY_RAW=0: without the floor (bench/lib/raw-server.mjs: bare `ws` and `net` servers, measured
//        the same way in the same run; each tree's row is also given as a ratio to it); DENSITY_RAW=only: the floor alone
//        DENSITY_SPLIT=0: without the second table (RSS split: anon/file, V8's resident pages, native)
//        DENSITY_JSON=<file>: every repetition's figures, written there
import { writeFileSync } from 'node:fs'
import {
  FrameType,
  inBatches,
  kib,
  openSession,
  startDemo,
  startRaw,
  trees,
  waitFor,
} from '../lib/sessions.mjs'

const COUNTS = (process.env.DENSITY_COUNTS ?? '1000,5000,10000').split(',').map(Number)
const TRANSPORTS = (process.env.DENSITY_TRANSPORTS ?? 'websocket,tcp').split(',')
const HOLD_SECONDS = Number(process.env.DENSITY_HOLD_SECONDS ?? 10)
const REPEAT = Number(process.env.DENSITY_REPEAT ?? 3)
const WARMUP = Number(process.env.DENSITY_WARMUP ?? 500)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
/** The figures read per session (see rss-split.mjs). */
const FIGURES = ['rss', 'rssAnon', 'rssFile', 'heap', 'v8Young', 'v8Old', 'native', 'external', 'rssOld']

/** Opens sessions [from, to), each authenticated by one `auth.me`; resolves once all answered. */
async function openAuthenticated(transport, demo, token, sessions, answers, errors, from, to) {
  await inBatches(from, to, 64, async (i) => {
    sessions[i] = await openSession(transport, demo, token, i, (type) => {
      // An ERROR is an answer too (the session is alive), counted apart: 10,000 `auth.me` asked at
      // once may find the database pool busy (503), which says nothing about the sessions.
      if (type === FrameType.RESPONSE || type === FrameType.ERROR) answers[i]++
      if (type !== FrameType.RESPONSE) errors.count++
    })
    sessions[i].request(1, 'auth.me')
  })
  await waitFor(() => answered(answers, from, to) >= to - from, 120_000, `${to - from} first answers`)
}

/** One transport on one tree, one fresh server: per-session figures at each count, and who answered. */
async function measureOnce(tree, transport) {
  const demo = tree.raw ? await startRaw() : await startDemo(tree.dir)
  const sessions = []
  try {
    const token = await demo.login()
    const total = COUNTS.at(-1)
    const errors = { count: 0 }
    // Warm-up: the same kind of sessions, opened, answered and closed; the baseline is read once the
    // server has closed all their sockets.
    const warm = []
    await openAuthenticated(transport, demo, token, warm, new Uint32Array(WARMUP), errors, 0, WARMUP)
    for (const s of warm) s.close()
    await waitFor(() => demo.openConnections() === 0, 60_000, 'warm-up sockets closed', 200)
    const base = withOld(await demo.memory())
    errors.count = 0
    const answers = new Uint32Array(total)
    const rows = []
    for (const count of COUNTS) {
      await openAuthenticated(transport, demo, token, sessions, answers, errors, sessions.length, count)
      await sleep(HOLD_SECONDS * 1000)
      const m = withOld(await demo.memory())
      // Per session: over the baseline / n, and the marginal one: over the previous count's reading / the
      // sessions added since (what the allocators' reserves at the baseline do not absorb, below).
      const previous = rows.at(-1)
      const row = { tree: tree.label, transport, sessions: count, settle: m.settle, total: {}, marginal: {} }
      for (const f of FIGURES) {
        row.total[f] = m[f] - base[f]
        row[f] = row.total[f] / count
        row.marginal[f] = previous ? (row.total[f] - previous.total[f]) / (count - previous.sessions) : row[f]
      }
      rows.push(row)
    }
    // Still answering after the hold: every session calls again.
    answers.fill(0)
    for (let i = 0; i < total; i++) sessions[i].request(3, 'auth.me')
    await waitFor(
      () => answered(answers, 0, total) >= total,
      120_000,
      `${total} answers after the hold`,
    ).catch(() => {})
    const still = answered(answers, 0, total)
    if (still < total) process.exitCode = 1
    return { rows, still, total, errors: errors.count, baseSettle: base.settle }
  } finally {
    for (const s of sessions) s?.close()
    await demo.stop()
  }
}

/**
 * RSS without V8's young generation: after a full collection it holds no object, and V8 sizes it from the
 * allocation rate (its pages stay resident), so it moves RSS by megabytes that are no session's.
 */
function withOld(m) {
  return { ...m, rssOld: m.rss - m.v8Young }
}

function answered(answers, from, to) {
  let count = 0
  for (let i = from; i < to; i++) if (answers[i] > 0) count++
  return count
}

const RAW = process.env.DENSITY_RAW
const measured = [...(RAW === '0' ? [] : [{ label: 'raw', raw: true }]), ...(RAW === 'only' ? [] : trees())]
/** Per case (tree, transport): the repetitions' results. */
const runs = new Map()
for (let rep = 0; rep < REPEAT; rep++)
  for (const transport of TRANSPORTS)
    for (const tree of measured) {
      const key = `${tree.label}/${transport}`
      const result = await measureOnce(tree, transport)
      runs.set(key, [...(runs.get(key) ?? []), result])
      const last = result.rows.at(-1)
      console.log(
        `  ${key} #${rep + 1}: at ${last.sessions}, KiB per session RSS ${kib(last.rss)} heap ${kib(last.heap)};` +
          ` settled in ${last.settle.ms} ms (${last.settle.settled ? 'settled' : 'NOT settled'});` +
          ` ${result.still}/${result.total} answered after the hold (${result.errors} ERROR)`,
      )
    }

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}
/** `median [min–max]` in KiB of one figure over the repetitions. */
const spread = (values) =>
  values.length === 1
    ? kib(values[0])
    : `${kib(median(values))} [${kib(Math.min(...values))}–${kib(Math.max(...values))}]`

if (process.env.DENSITY_JSON) writeFileSync(process.env.DENSITY_JSON, JSON.stringify([...runs], null, 1))
const cases = []
for (const [key, results] of runs) {
  const [tree, transport] = key.split('/')
  for (const [k, count] of COUNTS.entries()) {
    const values = (f) => results.map((r) => r.rows[k][f])
    const marginal = (f) => results.map((r) => r.rows[k].marginal[f])
    cases.push({
      tree,
      transport,
      sessions: count,
      values,
      marginal,
      from: k > 0 ? COUNTS[k - 1] : 0,
      answering: results.map((r) => `${r.still}/${r.total} (${r.errors} ERROR)`).join(', '),
    })
  }
}
const floor = (c) =>
  cases.find((f) => f.tree === 'raw' && f.transport === c.transport && f.sessions === c.sessions)
const ratio = (c, f) => {
  const b = floor(c)
  if (b === undefined) return '-'
  const x = median(c.values(f))
  const y = median(b.values(f))
  return y > 0 ? (x / y).toFixed(2) : '-'
}
console.log(
  `\ndensity: idle authenticated sessions held ${HOLD_SECONDS} s, ${REPEAT} server(s) per case after ${WARMUP} warm-up ` +
    'sessions; KiB per session over the baseline, median [min–max] of the repetitions',
)
console.table(
  cases.map((c) => ({
    tree: c.tree,
    transport: c.transport,
    sessions: c.sessions,
    'RSS KiB': spread(c.values('rss')),
    'heap KiB': spread(c.values('heap')),
    'marginal from': c.from,
    'RSS KiB marginal': spread(c.marginal('rss')),
    'RSS − V8 young marginal': spread(c.marginal('rssOld')),
    'heap KiB marginal': spread(c.marginal('heap')),
    'external KiB': spread(c.values('external')),
    'answering after': c.answering,
    '÷ raw RSS / heap': `${ratio(c, 'rss')} / ${ratio(c, 'heap')}`,
  })),
)
if (process.env.DENSITY_SPLIT !== '0') {
  console.log(
    '\nRSS split, marginal KiB per session (from the previous count; the first: from the baseline), median ' +
      '[min–max]: RSS = RssAnon + RssFile; RssAnon = V8 young + V8 old (resident heap pages) + native ' +
      "(malloc's arenas: Node's and ws's native objects, ArrayBuffer stores); V8 old − heap used = free space in V8's pages",
  )
  console.table(
    cases.map((c) => ({
      tree: c.tree,
      transport: c.transport,
      sessions: `${c.from}→${c.sessions}`,
      RssAnon: spread(c.marginal('rssAnon')),
      RssFile: spread(c.marginal('rssFile')),
      'V8 young': spread(c.marginal('v8Young')),
      'V8 old': spread(c.marginal('v8Old')),
      'heap used': spread(c.marginal('heap')),
      native: spread(c.marginal('native')),
    })),
  )
}
