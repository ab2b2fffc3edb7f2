// Cold import time (issue 42): each of N fresh processes times one `import()` of a built file with
// performance.now(); the median per target. With BENCH_BEFORE=<another built checkout> the same file of that
// tree is timed in alternation (before, after, before, …) so both see the same load.
//
//   node bench/cold-import.mjs [packages/auth/dist/index.js …]   (BENCH_RUNS, default 5)
//
// Wall time on a shared machine moves with the load; for a load-independent figure count instructions:
// `env -u NODE_EXTRA_CA_CERTS valgrind --tool=callgrind node -e "import('<file>')"` (bench/README.md).
import { execFileSync } from 'node:child_process'
import { join, resolve } from 'node:path'

const here = resolve(import.meta.dirname, '..')
const targets = process.argv.slice(2)
if (targets.length === 0) targets.push('packages/auth/dist/index.js', 'packages/core/dist/index.js')
const runs = Number(process.env.BENCH_RUNS ?? 5)
const trees = process.env.BENCH_BEFORE
  ? { before: resolve(process.env.BENCH_BEFORE), after: here }
  : { after: here }

/** Milliseconds one fresh process spends in `import(file)`. */
function importTime(file) {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); console.log(performance.now() - t)`
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })
  return Number(out.trim())
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

for (const target of targets) {
  const times = Object.fromEntries(Object.keys(trees).map((k) => [k, []]))
  for (let i = 0; i < runs; i++)
    for (const [name, tree] of Object.entries(trees)) times[name].push(importTime(join(tree, target)))
  const line = Object.entries(times)
    .map(([name, xs]) => `${name} ${median(xs).toFixed(1)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`)
    .join('; ')
  console.log(`${target}: ${line}`)
}
