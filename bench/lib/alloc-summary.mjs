// A sampling heap profile (`.heapprofile`: bench/lib/gc-probe.mjs with BENCH_ALLOC=1 and
// BENCH_CPU_PROFILE_DIR) as the bytes each function allocated itself, largest first:
//
//   node bench/lib/alloc-summary.mjs <file.heapprofile> [top] [divisor]
// `divisor` (e.g. events × subscribers) prints bytes per unit beside each share.
import { readFileSync } from 'node:fs'
import { frameKey } from './profile-summary.mjs'

const [file, top = '30', divisor = '1'] = process.argv.slice(2)
const profile = JSON.parse(readFileSync(file, 'utf8'))
const bySite = new Map()
let total = 0
const visit = (node) => {
  const key = frameKey(node.callFrame)
  bySite.set(key, (bySite.get(key) ?? 0) + node.selfSize)
  total += node.selfSize
  for (const child of node.children) visit(child)
}
visit(profile.head)
console.log(`${file}: ${total} bytes sampled, ${(total / Number(divisor)).toFixed(0)} per unit`)
for (const [key, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(top)))
  console.log(
    `${((100 * bytes) / total).toFixed(2).padStart(6)} %  ${(bytes / Number(divisor)).toFixed(1).padStart(8)}  ${key}`,
  )
