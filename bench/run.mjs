// `pnpm bench`: runs every benchmark suite (or the ones named: `pnpm bench core codec`).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { requireWrk } from './lib/harness.mjs'

const here = new URL('.', import.meta.url).pathname
const wanted = process.argv.slice(2)
const suites = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'lib' && existsSync(join(here, d.name, 'run.mjs')))
  .map((d) => d.name)
  // faults (bench/faults) injects failures rather than measuring speed: run by name or `pnpm faults`.
  .filter((name) => (wanted.length === 0 && name !== 'faults') || wanted.includes(name))
// Up front, not after the first suites ran: a suite that needs wrk says so by calling requireWrk().
if (suites.some((suite) => readFileSync(join(here, suite, 'run.mjs'), 'utf8').includes('requireWrk()')))
  requireWrk()
let failed = false
for (const suite of suites) {
  console.log(`\n=== bench/${suite}`)
  const r = spawnSync(process.execPath, [join(here, suite, 'run.mjs')], { stdio: 'inherit' })
  if (r.status !== 0) failed = true
}
process.exit(failed ? 1 : 0)
