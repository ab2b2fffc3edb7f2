// Lists what a second heap snapshot holds that the first did not (objects with ids above the first's
// largest), grouped by constructor and first retainer (constructor and edge), per unit; CHAIN=<regex>
// prints retainer chains (DEPTH=5) of the matching new objects. bench/README.md, bench/density.
//   node bench/lib/heap-retainers.mjs a.heapsnapshot b.heapsnapshot per [regex]   env: ROWS=60
import { readFileSync } from 'node:fs'

const [a, b, perText, filter] = process.argv.slice(2)
const per = Number(perText)
const maxId = (() => {
  const s = JSON.parse(readFileSync(a, 'utf8'))
  const f = s.snapshot.meta.node_fields
  const w = f.length,
    idAt = f.indexOf('id'),
    tAt = f.indexOf('type'),
    T = s.snapshot.meta.node_types[0]
  let m = 0
  for (let i = 0; i < s.nodes.length; i += w) {
    const t = T[s.nodes[i + tAt]]
    if (t === 'object' || t === 'closure' || t === 'array') m = Math.max(m, s.nodes[i + idAt])
  }
  return m
})()
const s = JSON.parse(readFileSync(b, 'utf8'))
const meta = s.snapshot.meta
const nf = meta.node_fields,
  ef = meta.edge_fields,
  nw = nf.length,
  ew = ef.length
const ntypes = meta.node_types[0],
  etypes = meta.edge_types[0]
const N = s.nodes.length / nw
const nameOf = (n) => {
  const t = ntypes[s.nodes[n * nw + nf.indexOf('type')]]
  let nm = s.strings[s.nodes[n * nw + nf.indexOf('name')]]
  if (t.includes('string')) nm = JSON.stringify(nm.slice(0, 40))
  return `${t}:${nm.slice(0, 50)}`
}
const firstEdge = new Uint32Array(N + 1)
let e = 0
for (let n = 0; n < N; n++) {
  firstEdge[n] = e
  e += s.nodes[n * nw + nf.indexOf('edge_count')] * ew
}
firstEdge[N] = e
const retainer = new Int32Array(N).fill(-1),
  retEdge = new Array(N)
for (let n = 0; n < N; n++)
  for (let i = firstEdge[n]; i < firstEdge[n + 1]; i += ew) {
    const to = s.edges[i + ef.indexOf('to_node')] / nw
    const et = etypes[s.edges[i + ef.indexOf('type')]]
    if (et === 'weak' || et === 'shortcut') continue
    if (retainer[to] === -1 || nameOf(retainer[to]).startsWith('synthetic')) {
      retainer[to] = n
      const nm = s.edges[i + ef.indexOf('name_or_index')]
      retEdge[to] = et === 'element' || et === 'hidden' ? `[${nm}]` : s.strings[nm]
    }
  }
const groups = new Map()
const re = filter ? new RegExp(filter) : null
for (let n = 0; n < N; n++) {
  if (s.nodes[n * nw + nf.indexOf('id')] <= maxId || s.nodes[n * nw + nf.indexOf('id')] > 1e8) continue
  const key = nameOf(n)
  if (re && !re.test(key)) continue
  const r = retainer[n] >= 0 ? `${nameOf(retainer[n])} .${retEdge[n]}` : '-'
  const k = `${key}  <-  ${r}`
  const g = groups.get(k) ?? { c: 0, b: 0 }
  g.c++
  g.b += s.nodes[n * nw + nf.indexOf('self_size')]
  groups.set(k, g)
}
const rows = [...groups].sort((x, y) => y[1].b - x[1].b).slice(0, Number(process.env.ROWS ?? 60))
for (const [k, g] of rows)
  console.log((g.b / per).toFixed(0).padStart(6), (g.c / per).toFixed(2).padStart(6), k)
if (process.env.CHAIN) {
  const re2 = new RegExp(process.env.CHAIN)
  const chains = new Map()
  for (let n = 0; n < N; n++) {
    if (s.nodes[n * nw + nf.indexOf('id')] <= maxId || s.nodes[n * nw + nf.indexOf('id')] > 1e8) continue
    if (!re2.test(nameOf(n))) continue
    let c = nameOf(n),
      m = n
    for (let d = 0; d < Number(process.env.DEPTH ?? 5) && retainer[m] >= 0; d++) {
      c += ` <- .${retEdge[m]} ${nameOf(retainer[m])}`
      m = retainer[m]
    }
    chains.set(c, (chains.get(c) ?? 0) + 1)
  }
  for (const [c, k] of [...chains].sort((x, y) => y[1] - x[1]).slice(0, 25))
    console.log((k / per).toFixed(2), c)
}
