// Side by side (issue 19): the same `GET` → {hello:"world"} on bare Fastify, bare Fastify with the spec's
// headers precomputed (the ceiling for a stack that must send them; and the same headers set in onSend,
// which costs more; and the ceiling route in a process that also runs the full stack), a Trivium endpoint without
// middleware, the full Trivium stack (public; authenticated + permission), the official-plugin stack and
// NestJS, each server in its own process on CPU 0, wrk (-t1 -c50) on CPU 1, interleaved rounds, medians,
// ratios within this run. First a headroom check: the generator must not be the limit.
// env: BENCH_ROUNDS (default 3), BENCH_DURATION (s, default 8), BENCH_CONNECTIONS (default 50),
//      BENCH_RESTART=0 (keep one process per server for every round; default: fresh ones each round),
//      BENCH_HEADROOM=0 (skip the headroom check), BENCH_NEST=0 (leave NestJS out),
//      BENCH_BEFORE=<checkout> (another built checkout, e.g. an older commit in a git worktree: its
//      bench/core and bench/stack servers run as "(before)" cases in the same run, for before/after ratios).
import { compare, load, loadAutocannon, median, requireWrk, startServer } from '../lib/harness.mjs'

requireWrk()

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION = Number(process.env.BENCH_DURATION ?? 8)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const here = (f) => new URL(f, import.meta.url).pathname
const token = (s) => s.lines.find((l) => l.startsWith('TOKEN ')).slice(6)
const ORIGIN = 'https://app.example.com'
// The calibration case: the ceiling plus this much busy JavaScript per request (bare.mjs BENCH_SPIN_NS).
const SPIN_NS = 1000
const CALIBRATION = 'ceiling + 1 µs of JavaScript (calibration)'

const servers = []
const specs = new Map() // server → how it was started, to start it again
async function start(script, env) {
  const s = await startServer(script, env)
  servers.push(s)
  specs.set(s, { script, env })
  return s
}

/**
 * Every round after the first runs against fresh server processes (BENCH_RESTART=0: the same ones): one
 * process's luck (hash seeds, heap layout, JIT timing) moved a case by up to ±15 % between runs here.
 * Each case follows its server: new port, new pid, and the new process's token.
 */
async function restartServers(cases) {
  const old = servers.splice(0)
  await Promise.all(old.map((s) => s.stop()))
  const byPid = new Map()
  for (const s of old) {
    const { script, env } = specs.get(s)
    byPid.set(s.pid, { old: s, fresh: await start(script, env) })
  }
  for (const c of cases) {
    const { old: o, fresh } = byPid.get(c.pid)
    c.url = c.url.replace(`:${o.port}/`, `:${fresh.port}/`)
    c.pid = fresh.pid
    if (c.headers?.authorization) c.headers.authorization = `Bearer ${token(fresh)}`
  }
}

try {
  const bare = await start(here('./bare.mjs'))
  const ceiling = await start(here('./bare.mjs'), { BENCH_HEADERS: '1' })
  const ceilingOnSend = await start(here('./bare.mjs'), { BENCH_HEADERS: 'onSend' })
  const ceilingSpin = await start(here('./bare.mjs'), { BENCH_HEADERS: '1', BENCH_SPIN_NS: String(SPIN_NS) })
  const core = await start(here('../core/server.mjs'))
  const stackPublic = await start(here('../stack/server.mjs'))
  const stackSecure = await start(here('../stack/server.mjs'))
  const stackCeiling = await start(here('./stack-ceiling.mjs'))
  const official = await start(here('./official.mjs'))
  const nest = process.env.BENCH_NEST === '0' ? undefined : await start(here('./nest.mjs'))
  const beforeTree = process.env.BENCH_BEFORE
  const before = beforeTree
    ? {
        core: await start(`${beforeTree}/bench/core/server.mjs`),
        stackPublic: await start(`${beforeTree}/bench/stack/server.mjs`),
        stackSecure: await start(`${beforeTree}/bench/stack/server.mjs`),
      }
    : undefined
  const url = (s, p) => `http://127.0.0.1:${s.port}${p}`

  if (process.env.BENCH_HEADROOM !== '0') {
    // Headroom: bare Fastify under wrk -c50, wrk -c100 and autocannon -c50, interleaved, with each
    // generator's own CPU use (of its core). A generator is the limit when it uses its whole core; then
    // more headroom (wrk instead of autocannon, more connections) raises the server's rate.
    const target = url(bare, '/hello')
    const runs = [
      [`wrk -t1 -c${CONNECTIONS}`, (d) => load({ url: target, duration: d, connections: CONNECTIONS })],
      [
        `wrk -t1 -c${CONNECTIONS * 2}`,
        (d) => load({ url: target, duration: d, connections: CONNECTIONS * 2 }),
      ],
      [
        `autocannon -c${CONNECTIONS}`,
        (d) => loadAutocannon({ url: target, duration: d, connections: CONNECTIONS }),
      ],
    ]
    const rps = Object.fromEntries(runs.map(([k]) => [k, []]))
    const cpu = Object.fromEntries(runs.map(([k]) => [k, []]))
    for (const [, run] of runs) run(1) // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      for (const [k, run] of runs) {
        const result = run(DURATION)
        rps[k].push(result.rps)
        cpu[k].push(result.generatorCpu)
      }
    }
    const m = Object.fromEntries(runs.map(([k]) => [k, median(rps[k])]))
    const c = Object.fromEntries(runs.map(([k]) => [k, median(cpu[k])]))
    const [w50, w100, ac] = runs.map(([k]) => k)
    console.log(
      `\nheadroom: bare Fastify under each generator (${ROUNDS} interleaved rounds × ${DURATION}s, medians)`,
    )
    console.log(
      `  ${'generator'.padEnd(22)} ${'req/s'.padStart(8)} ${`vs ${w50}`.padStart(16)} ${'generator CPU'.padStart(14)}`,
    )
    for (const [k] of runs) {
      console.log(
        `  ${k.padEnd(22)} ${String(Math.round(m[k])).padStart(8)} ${(m[k] / m[w50]).toFixed(2).padStart(16)} ${`${Math.round(c[k] * 100)} %`.padStart(14)}`,
      )
    }
    // wrk is not the limit when it has idle CPU left on its core and drives the server at least as hard
    // as autocannon (within 3 %: noise); the -c100 line shows the rate with twice the connections.
    const ok = c[w50] < 0.9 && m[w50] >= m[ac] * 0.97
    console.log(
      `  ${ok ? 'PASS' : 'MISS'}: generator not the limit (wrk CPU ${Math.round(c[w50] * 100)} % < 90 %; wrk / autocannon ${(m[w50] / m[ac]).toFixed(2)} ≥ 0.97; wrk -c${CONNECTIONS * 2} / -c${CONNECTIONS} ${(m[w100] / m[w50]).toFixed(2)})`,
    )
  }

  const cases = [
    { name: 'bare fastify', url: url(bare, '/hello'), pid: bare.pid },
    { name: 'bare fastify + spec headers (ceiling)', url: url(ceiling, '/hello'), pid: ceiling.pid },
    {
      name: 'the same headers set in onSend',
      url: url(ceilingOnSend, '/hello'),
      pid: ceilingOnSend.pid,
    },
    {
      name: CALIBRATION,
      url: url(ceilingSpin, '/hello'),
      pid: ceilingSpin.pid,
    },
    { name: 'trivium endpoint, no middleware', url: url(core, '/core'), pid: core.pid },
    {
      name: 'full stack, public',
      url: url(stackPublic, '/public'),
      pid: stackPublic.pid,
      headers: { origin: ORIGIN },
    },
    {
      name: 'full stack, auth + permission',
      url: url(stackSecure, '/secure'),
      pid: stackSecure.pid,
      headers: { origin: ORIGIN, authorization: `Bearer ${token(stackSecure)}` },
    },
    {
      name: "ceiling route in the full stack's process",
      url: url(stackCeiling, '/hello'),
      pid: stackCeiling.pid,
    },
    {
      name: 'official plugins, auth + permission',
      url: url(official, '/secure'),
      pid: official.pid,
      headers: { origin: ORIGIN, authorization: `Bearer ${token(official)}` },
    },
  ]
  if (nest) {
    cases.push({
      name: 'NestJS, JWT guard + throttler',
      url: url(nest, '/secure'),
      pid: nest.pid,
      headers: { authorization: `Bearer ${token(nest)}` },
    })
  }
  if (before) {
    cases.push(
      { name: 'trivium endpoint (before)', url: url(before.core, '/core'), pid: before.core.pid },
      {
        name: 'full stack, public (before)',
        url: url(before.stackPublic, '/public'),
        pid: before.stackPublic.pid,
        headers: { origin: ORIGIN },
      },
      {
        name: 'full stack, auth + permission (before)',
        url: url(before.stackSecure, '/secure'),
        pid: before.stackSecure.pid,
        headers: { origin: ORIGIN, authorization: `Bearer ${token(before.stackSecure)}` },
      },
    )
  }
  const rows = await compare({
    title: 'side by side: GET returning {hello:"world"}, one process per server',
    baseline: 'bare fastify',
    secondBaseline: 'bare fastify + spec headers (ceiling)',
    rounds: ROUNDS,
    duration: DURATION,
    connections: CONNECTIONS,
    cases,
    beforeRound: process.env.BENCH_RESTART === '0' ? undefined : (r) => r > 0 && restartServers(cases),
  })
  const row = Object.fromEntries(rows.map((r) => [r.name, r]))
  let refused = false
  for (const r of rows) {
    if (r.non2xx > 0 || r.errors > 0) {
      refused = true
      console.log(
        `  ! ${r.name}: ${r.non2xx} responses ≥ 400, ${r.errors} socket errors (the figures are not valid)`,
      )
    }
  }
  const secure = row['full stack, auth + permission']
  const officialRow = row['official plugins, auth + permission']
  // [name, measured ratio, the same ratio from server CPU per request (throughput at equal CPU:
  // independent of the generator, less sensitive to other load on the machine), target]
  const cpuRatio = (slow, fast) => fast.cpuUsPerRequest / slow.cpuUsPerRequest
  const bareRow = row['bare fastify']
  const ceilingRow = row['bare fastify + spec headers (ceiling)']
  const coreRow = row['trivium endpoint, no middleware']
  const publicRow = row['full stack, public']
  const targets = [
    ['trivium endpoint, no middleware / bare', coreRow.ratio, cpuRatio(coreRow, bareRow), 0.92],
    ['full stack auth + permission / bare', secure.ratio, cpuRatio(secure, bareRow), 0.68],
    ['full stack auth + permission / ceiling', secure.ratio2, cpuRatio(secure, ceilingRow), 0.9],
    ['full stack public / bare', publicRow.ratio, cpuRatio(publicRow, bareRow), 0.7],
    ['full stack auth / official plugins', secure.rps / officialRow.rps, cpuRatio(secure, officialRow), 3],
  ]
  console.log(`\ntargets (issue 19; PASS/MISS on req/s; "at equal CPU" from server CPU µs/request):`)
  console.log(`        ${''.padEnd(42)} ${'req/s'.padStart(6)} ${'at equal CPU'.padStart(13)}`)
  for (const [name, value, atEqualCpu, target] of targets) {
    console.log(
      `  ${value >= target ? 'PASS' : 'MISS'}  ${name.padEnd(42)} ${value.toFixed(2).padStart(6)} ${atEqualCpu.toFixed(2).padStart(13)}  (≥ ${target})`,
    )
  }
  // Not a target: the full stack against the same ceiling route in a process of the same layout, which
  // separates what Trivium's per-request work costs from what the bigger process costs every route.
  const inProcess = row["ceiling route in the full stack's process"]
  console.log(
    `\nprocess layout: the ceiling route in the full stack's process / alone ${(inProcess.rps / ceilingRow.rps).toFixed(2)} (server CPU ${inProcess.cpuUsPerRequest.toFixed(1)} vs ${ceilingRow.cpuUsPerRequest.toFixed(1)} µs/req); full stack auth + permission / that route ${(secure.rps / inProcess.rps).toFixed(2)}, public ${(publicRow.rps / inProcess.rps).toFixed(2)}`,
  )
  // Not a target: how much server CPU one µs of JavaScript per request costs here, and so how many µs of
  // JavaScript over the ceiling the ceiling target leaves (bench/README.md, "A µs of JavaScript costs more").
  const spinRow = row[CALIBRATION]
  const perJsUs = (spinRow.cpuUsPerRequest - ceilingRow.cpuUsPerRequest) / (SPIN_NS / 1000)
  const budget = (ceilingRow.cpuUsPerRequest / 0.9 - ceilingRow.cpuUsPerRequest) / perJsUs
  console.log(
    perJsUs > 0
      ? `calibration: ${SPIN_NS / 1000} µs of JavaScript per request costs ${perJsUs.toFixed(1)} µs of server CPU per request (req/s ${(spinRow.rps / ceilingRow.rps).toFixed(2)} of the ceiling); the ceiling target (≥ 0.9) leaves ${budget.toFixed(1)} µs of JavaScript over the ceiling at that rate (bench/js-path measures it)`
      : `calibration: not measurable in this run (the ceiling + ${SPIN_NS / 1000} µs of JavaScript used no more server CPU than the ceiling: noise; more rounds)`,
  )
  if (refused) process.exitCode = 1
} finally {
  await Promise.all(servers.map((s) => s.stop()))
}
