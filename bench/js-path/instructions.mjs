// Load-independent figures for bench/js-path (issue 42): instructions per request counted by valgrind's
// callgrind, and garbage collections per 100k requests counted by `--trace-gc`. On a machine that other
// work shares, the CPU time per request moves with the load (cache misses, frequency); the instructions a
// request executes do not. Each case runs in one process under callgrind, instrumented only for
// the measured requests (after JS_PATH_WARMUP batches of 50), so start-up, module loading and warm-up are
// left out; the processes run side by side (their counts do not depend on each other).
//
//   node bench/js-path/instructions.mjs
//   env: BENCH_CASES=bare,ceiling,core,public,secure  JS_PATH_IR_REQUESTS=10000  JS_PATH_WARMUP=2000
//        (a stack case may be `public~stages+cors`: without those parts, case.mjs)
//        JS_PATH_GC_REQUESTS=100000  BENCH_BEFORE=<another built checkout, with this case.mjs>
import { spawnSync } from 'node:child_process'
import { gatedInstructions } from '../lib/callgrind.mjs'

const here = new URL('.', import.meta.url).pathname
const cases = (process.env.BENCH_CASES ?? 'bare,ceiling,core,public,secure').split(',').filter(Boolean)
const irRequests = Number(process.env.JS_PATH_IR_REQUESTS ?? 10_000)
const warmup = process.env.JS_PATH_WARMUP ?? '2000'
const gcRequests = Number(process.env.JS_PATH_GC_REQUESTS ?? 100_000)
const before = process.env.BENCH_BEFORE
const trees = before
  ? [
      ['now', here],
      ['before', `${before}/bench/js-path/`],
    ]
  : [['now', here]]

// `public~stages+rateLimit`: the stack case without those parts (case.mjs, JS_PATH_STACK_WITHOUT), in
// the same run as the whole stack.
const caseName = (which) => which.split('~')[0]
function caseEnv(which) {
  const without = which.split('~')[1]
  return without === undefined ? process.env : { ...process.env, JS_PATH_STACK_WITHOUT: without }
}

/**
 * Instructions callgrind counted while one process of `which` served `requests` requests after its warm-up:
 * instrumentation starts off (valgrind then runs the code uncounted, and faster) and is switched on
 * (`callgrind_control -i on`) once case.mjs says WARM, off when it
 * says DONE (JS_PATH_GATE: it waits for a line on stdin at both points).
 */
function instructions(dir, which, requests) {
  const env = { ...caseEnv(which), JS_PATH_WARMUP: warmup, JS_PATH_ROUNDS: '1', JS_PATH_GATE: '1' }
  return gatedInstructions(
    // `--single-threaded`: V8's background compiler and GC threads would otherwise add a count that
    // varies from run to run (bench/README.md "bench/transports").
    [process.execPath, '--single-threaded', `${dir}case.mjs`, caseName(which), String(requests)],
    env,
    requests,
    which,
  )
}

/** Scavenges and mark-compacts (`--trace-gc`) during `gcRequests` requests after the usual warm-up. */
function collections(dir, which) {
  const out = spawnSync(
    process.execPath,
    ['--trace-gc', `${dir}case.mjs`, caseName(which), String(gcRequests)],
    {
      encoding: 'utf8',
      env: { ...caseEnv(which), JS_PATH_ROUNDS: '1' },
    },
  )
  if (out.status !== 0) throw new Error(`${which} --trace-gc: ${out.stderr.slice(-2000)}`)
  const measured = out.stdout.slice(out.stdout.indexOf('WARM\n'))
  const count = (kind) => measured.split('\n').filter((l) => l.includes(kind)).length
  const per100k = 100_000 / gcRequests
  return { scavenges: count('Scavenge') * per100k, markCompacts: count('Mark-Compact') * per100k }
}

const runs = cases.flatMap((which) => trees.map(([tree, dir]) => ({ which, tree, dir })))
const counted = await Promise.all(runs.map(({ which, dir }) => instructions(dir, which, irRequests)))
const rows = runs.map(({ which, tree, dir }, i) => ({
  which,
  tree,
  perRequest: counted[i],
  ...collections(dir, which),
}))
for (const { which, tree, perRequest, scavenges, markCompacts } of rows) {
  console.log(
    `${which.padEnd(8)} ${tree.padEnd(6)} ${Math.round(perRequest).toString().padStart(8)} instructions/request  ${scavenges.toFixed(0).padStart(4)} scavenges, ${markCompacts.toFixed(0)} mark-compacts per 100k requests`,
  )
}
const of = (which, tree) => rows.find((r) => r.which === which && r.tree === tree)?.perRequest
for (const [tree] of trees) {
  const over = (which, base) =>
    of(which, tree) !== undefined && of(base, tree) !== undefined
      ? `${Math.round(of(which, tree) - of(base, tree))}`
      : '–'
  console.log(
    `${tree}: instructions over the ceiling: public ${over('public', 'ceiling')}, auth + permission ${over('secure', 'ceiling')}; endpoint over bare ${over('core', 'bare')}`,
  )
}
