// Preloaded into a measured server (`--import` in NODE_OPTIONS) by bench/soak, bench/density and
// bench/fanout: on SIGUSR2 it runs full collections, then prints its heap after GC, RSS, external and
// ArrayBuffer bytes as one `BENCH_MEMORY {json}` line on stdout. With BENCH_HEAP_SNAPSHOT_DIR set it
// also writes a heap snapshot there after the collections, `<pid>-<n>.heapsnapshot` (n from 1 in each
// process; bench/lib/heap-summary.mjs compares two).

import { join } from 'node:path'
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8'
import { runInNewContext } from 'node:vm'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
const snapshotDir = process.env.BENCH_HEAP_SNAPSHOT_DIR
let snapshots = 0
process.on('SIGUSR2', async () => {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
  }
  gc()
  const m = process.memoryUsage()
  const figures = { heap: m.heapUsed, rss: m.rss, external: m.external, arrayBuffers: m.arrayBuffers }
  if (snapshotDir)
    figures.snapshot = writeHeapSnapshot(join(snapshotDir, `${process.pid}-${++snapshots}.heapsnapshot`))
  process.stdout.write(`BENCH_MEMORY ${JSON.stringify(figures)}\n`)
})
