// What a process's resident set is made of, read the way the kernel counts it, for bench/density's RSS
// per session (bench/README.md "bench/density and bench/fanout"). RSS = RssAnon (private memory: V8's
// heap pages, malloc's arenas with Node's and ws's native per-socket objects and ArrayBuffer stores,
// thread stacks) + RssFile (mapped files: the node binary's and libraries' pages touched so far) +
// RssShmem. Kernel socket buffers are kernel memory, in no process's RSS. V8's part is its own count of
// resident heap pages (`total_physical_size`); the rest of RssAnon is "native".
import { readFileSync } from 'node:fs'
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8'

const KIB = 1024

/** /proc/self/status's RssAnon, RssFile, RssShmem and VmRSS (bytes). */
function status() {
  const text = readFileSync('/proc/self/status', 'utf8')
  const field = (name) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * KIB
  return {
    vmRss: field('VmRSS'),
    rssAnon: field('RssAnon'),
    rssFile: field('RssFile'),
    rssShmem: field('RssShmem'),
  }
}

/** Transparent huge pages in the resident set (2 MiB steps in RSS when the kernel uses them). */
function anonHugePages() {
  try {
    const text = readFileSync('/proc/self/smaps_rollup', 'utf8')
    return Number(/^AnonHugePages:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * KIB
  } catch {
    return 0
  }
}

/** The split of RSS now: kernel fields, V8's resident heap pages and committed heap, and the native rest. */
export function rssSplit() {
  const s = status()
  const v8 = getHeapStatistics()
  // The young generation's pages: sized by V8 from the allocation rate (up to 2 × 16 MiB), kept after a
  // full collection; a step in RSS that is no session's.
  const young = getHeapSpaceStatistics()
    .filter((space) => space.space_name === 'new_space' || space.space_name === 'new_large_object_space')
    .reduce((sum, space) => sum + space.physical_space_size, 0)
  return {
    ...s,
    anonHuge: anonHugePages(),
    heapTotal: v8.total_heap_size,
    v8Resident: v8.total_physical_size,
    v8Young: young,
    v8Old: v8.total_physical_size - young,
    v8Malloced: v8.malloced_memory,
    native: s.rssAnon - v8.total_physical_size,
  }
}

/**
 * Resolves once RssAnon stopped moving: its last SETTLE_SAMPLES readings (every 25 ms) within
 * SETTLE_BYTES of each other (V8's background threads finish sweeping and unmapping after a collection),
 * or after 10 s. Says how long it took, whether it settled, and the last window's spread.
 */
export async function settled({ samples = 8, bytes = 64 * KIB, maxMs = 10_000 } = {}) {
  const start = performance.now()
  const seen = []
  for (;;) {
    seen.push(status().rssAnon)
    if (seen.length > samples) seen.shift()
    const spread = Math.max(...seen) - Math.min(...seen)
    const ms = performance.now() - start
    if (seen.length === samples && spread <= bytes) return { ms: Math.round(ms), settled: true, spread }
    if (ms > maxMs) return { ms: Math.round(ms), settled: false, spread }
    await new Promise((r) => setTimeout(r, 25))
  }
}
