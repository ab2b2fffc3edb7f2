// JavaScript cost per request, kernel left out (issue 19): on this VM the HTTP benches' server CPU per
// request is mostly kernel time, and how much of it a request costs depends on the load generator (a
// response to a client asleep in epoll_wait costs the server a wake-up; bench/README.md). Here each case
// is the side-by-side server's app driven through `fastify.routing` with @trivium/tcp's lean
// request/response pair: Fastify's routing, hooks and reply, Trivium's code, no socket. Each case runs
// in fresh processes pinned to CPU 0 (BENCH_ROUNDS, default 3, interleaved), each process five rounds of
// BENCH_REQUESTS (default 200 000) requests; the figure is the median over processes of each process's
// fastest round (GC and the machine only ever add time). BENCH_CASES=bare,secure runs only those.
import { spawnSync } from 'node:child_process'
import { median } from '../lib/harness.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
// BENCH_METRIC=CPU: each process's CPU time per request instead of the wall clock (on a machine other
// work shares, the wall clock counts their time too; bench/README.md, js-path).
const METRIC = process.env.BENCH_METRIC === 'CPU' ? 'CPU' : 'US'
const REQUESTS = process.env.BENCH_REQUESTS ?? '200000'
const here = new URL('.', import.meta.url).pathname
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0
const cases = [
  ['bare', 'bare fastify'],
  ['ceiling', 'bare fastify + spec headers (ceiling)'],
  ['host-route', "bare route beside @trivium/core (the host's route)"],
  ['core', 'trivium endpoint, no middleware'],
  ['deadline', 'the same + Trivium-Timeout-Ms'],
  ['async', 'trivium endpoint, async handler'],
  ['async-deadline', 'the same + Trivium-Timeout-Ms'],
  ['public', 'full stack, public'],
  ['secure', 'full stack, auth + permission'],
]
const only = process.env.BENCH_CASES?.split(',').filter(Boolean)
if (only) for (let i = cases.length - 1; i >= 0; i--) if (!only.includes(cases[i][0])) cases.splice(i, 1)
// BENCH_BEFORE=<another built checkout>: its own bench/js-path/case.mjs (its harness and its build) runs
// each case too, interleaved, and the over-ceiling figures of both are printed side by side.
const before = process.env.BENCH_BEFORE
const trees = before
  ? [
      ['', here],
      [' (before)', `${before}/bench/js-path/`],
    ]
  : [['', here]]
const samples = {}
for (let r = 0; r < ROUNDS; r++) {
  for (const [k] of cases) {
    for (const [suffix, dir] of trees) {
      const args = [process.execPath, `${dir}case.mjs`, k, REQUESTS]
      const out = hasTaskset
        ? spawnSync('taskset', ['-c', '0', ...args], { encoding: 'utf8' })
        : spawnSync(args[0], args.slice(1), { encoding: 'utf8' })
      if (out.status !== 0) throw new Error(`${k}: ${out.stderr}`)
      const us = out.stdout
        .split('\n')
        .filter((l) => l.startsWith(`${METRIC} `))
        .map((l) => Number(l.slice(METRIC.length + 1)))
      samples[k + suffix] = [...(samples[k + suffix] ?? []), Math.min(...us)]
    }
  }
}
for (const [suffix] of trees) report(suffix)
// The over-ceiling pairs need the ceiling case of both trees (BENCH_CASES without `ceiling` measures none).
if (before && samples.ceiling && samples['ceiling (before)']) {
  const over = (suffix, k) => median(samples[k + suffix]) - median(samples[`ceiling${suffix}`])
  for (const k of ['public', 'secure'].filter((k) => samples[k]))
    console.log(
      `${k} over the ceiling: ${over('', k).toFixed(2)} µs, before ${over(' (before)', k).toFixed(2)} µs (Δ ${(over('', k) - over(' (before)', k)).toFixed(2)})`,
    )
}

function report(suffix) {
  const m = Object.fromEntries(cases.map(([k]) => [k, median(samples[k + suffix])]))
  console.log(
    `\njs-path${suffix}: JavaScript µs per request through fastify.routing, no socket (${ROUNDS} processes per case, fastest of 5 rounds each, medians)`,
  )
  console.log(
    `${'case'.padEnd(40)} ${'µs/req'.padStart(7)} ${'vs bare'.padStart(8)} ${'vs ceiling'.padStart(11)}  each process`,
  )
  for (const [k, name] of cases) {
    console.log(
      `${name.padEnd(40)} ${m[k].toFixed(2).padStart(7)} ${(m.bare / m[k] || 0).toFixed(2).padStart(8)} ${(m.ceiling / m[k] || 0).toFixed(2).padStart(11)}  ${samples[k + suffix].map((x) => x.toFixed(2)).join(' ')}`,
    )
  }
  console.log(
    `\nTrivium's own JavaScript over the ceiling: public ${(m.public - m.ceiling).toFixed(2)} µs, auth + permission ${(m.secure - m.ceiling).toFixed(2)} µs per request; endpoint over bare ${(m.core - m.bare).toFixed(2)} µs`,
  )
  if (m['host-route'])
    console.log(
      `A host's own route beside @trivium/core (its early-route guard) over bare: ${(m['host-route'] - m.bare).toFixed(2)} µs`,
    )
  if (m.deadline && m.core)
    console.log(
      `Deadline per call (PROTOCOL.md "Deadlines"): sync handler ${(m.deadline / m.core).toFixed(3)}x (+${(m.deadline - m.core).toFixed(2)} µs), async handler (timer + race) ${(m['async-deadline'] / m.async).toFixed(3)}x (+${(m['async-deadline'] - m.async).toFixed(2)} µs)`,
    )
}
