// Compares two heap snapshots (v8.writeHeapSnapshot) by constructor: what the second holds more of, in
// count and self bytes, divided by `per` (e.g. the sessions opened between them).
//   node bench/lib/heap-summary.mjs before.heapsnapshot after.heapsnapshot [per] [rows]
import { readFileSync } from 'node:fs'

function summary(file) {
  const snap = JSON.parse(readFileSync(file, 'utf8'))
  const fields = snap.snapshot.meta.node_fields
  const types = snap.snapshot.meta.node_types[0]
  const width = fields.length
  const typeAt = fields.indexOf('type')
  const nameAt = fields.indexOf('name')
  const sizeAt = fields.indexOf('self_size')
  const byKey = new Map()
  const nodes = snap.nodes
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]]
    let name = snap.strings[nodes[i + nameAt]]
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(string)'
    else if (type === 'number') name = '(number)'
    else if (name.length > 60) name = `${name.slice(0, 60)}…`
    const key = `${type}:${name}`
    const entry = byKey.get(key) ?? { count: 0, bytes: 0 }
    entry.count++
    entry.bytes += nodes[i + sizeAt]
    byKey.set(key, entry)
  }
  return byKey
}

const [a, b, perText, rowsText] = process.argv.slice(2)
const per = Number(perText ?? 1)
const before = summary(a)
const after = summary(b)
const rows = []
let total = 0
for (const [key, entry] of after) {
  const old = before.get(key) ?? { count: 0, bytes: 0 }
  const bytes = entry.bytes - old.bytes
  total += bytes
  rows.push({ key, count: ((entry.count - old.count) / per).toFixed(2), bytes: (bytes / per).toFixed(1) })
}
rows.sort((x, y) => Number(y.bytes) - Number(x.bytes))
console.table(rows.slice(0, Number(rowsText ?? 40)))
console.log(`total self bytes per unit: ${(total / per).toFixed(1)}`)
