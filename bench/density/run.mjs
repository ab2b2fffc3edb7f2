// Connection density (issue 42): how much one idle authenticated session costs the server. One demo
// instance per transport and tree (embedded PGlite, CPU 0); sessions are opened in steps up to each
// count of DENSITY_COUNTS, each authenticated (WebSocket: the token at the upgrade; TCP: its first call
// carries it) by one `auth.me` call, then held idle for DENSITY_HOLD_SECONDS; the server's heap after
// GC, RSS and external bytes are read inside it, per session = (figure - figure before any session) / n.
// After the last hold every session is asked again (`auth.me`): all must answer (an ERROR, e.g. a 503 from
// a busy database pool, is an answer, counted apart), or the run exits 1.
//
//   npx pnpm build && node bench/density/run.mjs
//   env: DENSITY_COUNTS=1000,5000,10000  DENSITY_TRANSPORTS=websocket,tcp  DENSITY_HOLD_SECONDS=10
//        BENCH_BEFORE=<another checkout, built>: measured the same way, before this one
//        DENSITY_RAW=0: without the floor (bench/lib/raw-server.mjs: bare `ws` and `net` servers, measured
//        first, the same way; each tree's row is also given as a ratio to it); DENSITY_RAW=only: the floor alone
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
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** One transport on one tree: rows of per-session figures, one per count. */
async function measure(tree, transport) {
  const demo = tree.raw ? await startRaw() : await startDemo(tree.dir)
  const sessions = []
  try {
    const token = await demo.login()
    const answers = new Uint32Array(COUNTS.at(-1))
    const errors = { count: 0 }
    const base = await demo.memory()
    const rows = []
    for (const count of COUNTS) {
      const from = sessions.length
      await inBatches(from, count, 64, async (i) => {
        sessions[i] = await openSession(transport, demo, token, i, (type) => {
          // An ERROR is an answer too (the session is alive), counted apart: 10,000 `auth.me` asked at
          // once may find the database pool busy (503), which says nothing about the sessions.
          if (type === FrameType.RESPONSE || type === FrameType.ERROR) answers[i]++
          if (type !== FrameType.RESPONSE) errors.count++
        })
        sessions[i].request(1, 'auth.me')
      })
      await waitFor(() => answered(answers, count) >= count, 120_000, `${count} first answers`)
      await sleep(HOLD_SECONDS * 1000)
      const m = await demo.memory()
      rows.push({
        tree: tree.label,
        transport,
        sessions: count,
        rss: (m.rss - base.rss) / count,
        heap: (m.heap - base.heap) / count,
        external: (m.external - base.external) / count,
      })
    }
    // Still answering after the hold: every session calls again.
    const total = COUNTS.at(-1)
    answers.fill(0)
    for (let i = 0; i < total; i++) sessions[i].request(3, 'auth.me')
    await waitFor(() => answered(answers, total) >= total, 120_000, `${total} answers after the hold`).catch(
      () => {},
    )
    const still = answered(answers, total)
    for (const row of rows) row.answering = `${still}/${total} (${errors.count} ERROR)`
    if (still < total) process.exitCode = 1
    return rows
  } finally {
    for (const s of sessions) s?.close()
    await demo.stop()
  }
}

function answered(answers, n) {
  let count = 0
  for (let i = 0; i < n; i++) if (answers[i] > 0) count++
  return count
}

const all = []
const RAW = process.env.DENSITY_RAW
const measured = [...(RAW === '0' ? [] : [{ label: 'raw', raw: true }]), ...(RAW === 'only' ? [] : trees())]
for (const transport of TRANSPORTS) for (const tree of measured) all.push(...(await measure(tree, transport)))
const floor = (r) =>
  all.find((f) => f.tree === 'raw' && f.transport === r.transport && f.sessions === r.sessions)
const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : '-')
console.log(
  `density: idle authenticated sessions held ${HOLD_SECONDS} s; KiB per session over the server before any session`,
)
console.table(
  all.map((r) => ({
    tree: r.tree,
    transport: r.transport,
    sessions: r.sessions,
    'RSS KiB': kib(r.rss),
    'heap KiB': kib(r.heap),
    'external KiB': kib(r.external),
    'answering after': r.answering,
    '÷ raw RSS / heap': floor(r) ? `${ratio(r.rss, floor(r).rss)} / ${ratio(r.heap, floor(r).heap)}` : '-',
  })),
)
