// Where one js-path case spends its time (issue 42: profile before changing anything): the case runs
// under `node --cpu-prof` (one process, one measured round after the usual warm-up), then the profile's
// functions are listed by self time, all of them and Trivium's own (packages/*/dist) apart, as shares of
// the profile (its samples are taken by the wall clock, so on a loaded machine only the shares mean
// something). The warm-up and start-up are in the profile too; compare trees with the same command.
//
//   node bench/js-path/profile.mjs <case> [requests]     (case: as case.mjs; default 200000 requests)
//   env: PROFILE_TOP=40
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const which = process.argv[2] ?? 'secure'
const requests = Number(process.argv[3] ?? 200_000)
const top = Number(process.env.PROFILE_TOP ?? 40)
const dir = mkdtempSync(join(tmpdir(), 'js-path-profile-'))
const here = new URL('.', import.meta.url).pathname
const run = spawnSync(
  process.execPath,
  ['--cpu-prof', `--cpu-prof-dir=${dir}`, `${here}case.mjs`, which, String(requests)],
  { encoding: 'utf8', env: { ...process.env, JS_PATH_ROUNDS: '1' } },
)
if (run.status !== 0) throw new Error(run.stderr)
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'))

const selfTime = new Map()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}
const total = [...selfTime.values()].reduce((a, b) => a + b, 0)
const byFunction = new Map()
for (const node of profile.nodes) {
  const { functionName, url, lineNumber } = node.callFrame
  const where = url
    .replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    .replace(/^.*\/packages\//, 'trivium:')
    .replace(/^file:\/\//, '')
  const key = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`
  byFunction.set(key, (byFunction.get(key) ?? 0) + (selfTime.get(node.id) ?? 0))
}
const rows = [...byFunction].sort((a, b) => b[1] - a[1])
const line = ([key, us]) => `${((100 * us) / total).toFixed(2).padStart(6)} %  ${key}`
const own = rows.filter(([key]) => key.includes('trivium:'))
console.log(
  `${which}: ${(total / 1000).toFixed(0)} ms profiled; Trivium's own code ${((100 * own.reduce((a, [, us]) => a + us, 0)) / total).toFixed(1)} % of it (self time)`,
)
console.log('\ntop self time, all code:')
for (const row of rows.slice(0, top)) console.log(line(row))
console.log("\ntop self time, Trivium's own code:")
for (const row of own.slice(0, top)) console.log(line(row))
