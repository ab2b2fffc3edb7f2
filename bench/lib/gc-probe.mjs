// Preloaded into a measured server (`--import` in NODE_OPTIONS) by bench/soak, bench/density and
// bench/fanout: on SIGUSR2 it runs full collections (the last one V8's "last resort" flavour, which also
// gives back the pages V8 keeps pooled after a collection), waits for the resident set to settle, then
// prints its heap after GC, RSS, external and ArrayBuffer bytes, and RSS split as the kernel counts it
// (rss-split.mjs), as one `BENCH_MEMORY {json}` line on stdout. With BENCH_HEAP_SNAPSHOT_DIR set it
// also writes a heap snapshot there after the collections, `<pid>-<n>.heapsnapshot` (n from 1 in each
// process; bench/lib/heap-summary.mjs compares two).
// SIGWINCH opens a window (`BENCH_WINDOW_OPEN`) and, sent again, closes it: one `BENCH_WINDOW {json}`
// line with the garbage collections in between (count, total and longest pause, how many were full
// mark-compacts, and when each pause of 1 ms or more began) and, with BENCH_CPU_PROFILE_DIR set, the path of a CPU profile of the window (node:inspector,
// 100 µs sampling; open it in Chrome DevTools or summarise it with bench/lib/profile-summary.mjs).
// With BENCH_ALLOC=1 the window also samples allocations (V8's sampling heap profiler, every 1 KiB,
// collected objects included, as bench/lib/alloc-probe.mjs) and reports the bytes allocated as `alloc`:
// the garbage that becomes scavenges. It slows the server: not for the same run as latency figures.
// With both, the sampling profile is written beside the CPU profile (`.heapprofile`).

import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { constants, PerformanceObserver } from 'node:perf_hooks'
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { rssSplit, settled } from './rss-split.mjs'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')
const snapshotDir = process.env.BENCH_HEAP_SNAPSHOT_DIR
let snapshots = 0
process.on('SIGUSR2', async () => {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
  }
  // A regular full collection keeps the freed pages pooled (resident): 70 of 154 MiB in a test with
  // 2 M small objects freed came back only with this flavour. Node 20's gc() takes V8's options.
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' })
  const settle = await settled()
  const m = process.memoryUsage()
  const figures = {
    heap: m.heapUsed,
    rss: m.rss,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    ...rssSplit(),
    settle,
  }
  if (snapshotDir)
    figures.snapshot = writeHeapSnapshot(join(snapshotDir, `${process.pid}-${++snapshots}.heapsnapshot`))
  process.stdout.write(`BENCH_MEMORY ${JSON.stringify(figures)}\n`)
})

const profileDir = process.env.BENCH_CPU_PROFILE_DIR
const sampleAllocations = process.env.BENCH_ALLOC === '1'
let window
process.on('SIGWINCH', async () => {
  if (window === undefined) {
    const gcs = []
    const observer = new PerformanceObserver((list) => gcs.push(...list.getEntries()))
    observer.observe({ entryTypes: ['gc'] })
    window = { gcs, observer, session: undefined }
    if (profileDir || sampleAllocations) {
      window.session = new Session()
      window.session.connect()
    }
    if (sampleAllocations) {
      await window.session.post('HeapProfiler.enable')
      await window.session.post('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      })
    }
    if (profileDir) {
      await window.session.post('Profiler.enable')
      await window.session.post('Profiler.setSamplingInterval', { interval: 100 })
      await window.session.post('Profiler.start')
    }
    process.stdout.write('BENCH_WINDOW_OPEN\n')
    return
  }
  const { gcs, observer, session } = window
  window = undefined
  const figures = { gc: gcSummary(gcs) }
  observer.disconnect()
  if (profileDir) {
    const { profile } = await session.post('Profiler.stop')
    figures.profile = join(profileDir, `window-${process.pid}-${Date.now()}.cpuprofile`)
    writeFileSync(figures.profile, JSON.stringify(profile))
  }
  if (sampleAllocations) {
    const { profile } = await session.post('HeapProfiler.stopSampling')
    figures.alloc = allocated(profile.head)
    if (profileDir) {
      // By allocating function: `node bench/lib/alloc-summary.mjs <file>`.
      figures.allocProfile = join(profileDir, `window-${process.pid}-${Date.now()}.heapprofile`)
      writeFileSync(figures.allocProfile, JSON.stringify(profile))
    }
  }
  session?.disconnect()
  process.stdout.write(`BENCH_WINDOW ${JSON.stringify(figures)}\n`)
})

/** Bytes allocated under a sampling heap profile's node (the samples' estimate). */
function allocated(node) {
  let bytes = node.selfSize
  for (const child of node.children) bytes += allocated(child)
  return bytes
}

function gcSummary(entries) {
  let ms = 0
  let maxMs = 0
  let major = 0
  for (const e of entries) {
    ms += e.duration
    maxMs = Math.max(maxMs, e.duration)
    if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++
  }
  // Each pause of 1 ms or more: when it began (epoch ms, to be placed among the caller's events) and how long.
  const pauses = entries
    .filter((e) => e.duration >= 1)
    .map((e) => ({ at: performance.timeOrigin + e.startTime, ms: Number(e.duration.toFixed(1)) }))
  return { count: entries.length, ms: Number(ms.toFixed(1)), maxMs: Number(maxMs.toFixed(1)), major, pauses }
}
