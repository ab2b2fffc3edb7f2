// A CPU profile (`.cpuprofile`: `node --cpu-prof`, node:inspector) as functions by self time. Used by
// bench/js-path/profile.mjs and, on its own, for the windows bench/lib/gc-probe.mjs profiles:
//
//   node bench/lib/profile-summary.mjs <file.cpuprofile> [top]
// Shares are of the busy time (the profile without `(idle)`); Trivium's own code (packages/*/dist) is
// also listed apart.
import { readFileSync } from 'node:fs'

/** [function and place, µs of self time] sorted by time, longest first; and the busy total in µs. */
export function selfTimes(profile) {
  const selfTime = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]
    selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  const byFunction = new Map()
  for (const node of profile.nodes) {
    const key = frameKey(node.callFrame)
    byFunction.set(key, (byFunction.get(key) ?? 0) + (selfTime.get(node.id) ?? 0))
  }
  const rows = [...byFunction].filter(([key]) => !key.startsWith('(idle)')).sort((a, b) => b[1] - a[1])
  return { rows, total: rows.reduce((a, [, us]) => a + us, 0) }
}

/** A profile's call frame as `function place:line`, packages shortened (`trivium:`, the npm package). */
export function frameKey({ functionName, url, lineNumber }) {
  const where = url
    .replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '')
    .replace(/^.*\/packages\//, 'trivium:')
    .replace(/^file:\/\//, '')
  return `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`
}

/** Prints the `top` functions by self time, all code and Trivium's own apart. */
export function printSelfTimes(label, profile, top) {
  const { rows, total } = selfTimes(profile)
  const line = ([key, us]) => `${((100 * us) / total).toFixed(2).padStart(6)} %  ${key}`
  const own = rows.filter(([key]) => key.includes('trivium:'))
  console.log(
    `${label}: ${(total / 1000).toFixed(0)} ms busy; Trivium's own code ${((100 * own.reduce((a, [, us]) => a + us, 0)) / total).toFixed(1)} % of it (self time)`,
  )
  console.log('\ntop self time, all code:')
  for (const row of rows.slice(0, top)) console.log(line(row))
  console.log("\ntop self time, Trivium's own code:")
  for (const row of own.slice(0, top)) console.log(line(row))
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const file = process.argv[2]
  printSelfTimes(file, JSON.parse(readFileSync(file, 'utf8')), Number(process.argv[3] ?? 40))
}
