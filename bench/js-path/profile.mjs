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
import { printSelfTimes } from '../lib/profile-summary.mjs'

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

printSelfTimes(which, profile, top)
