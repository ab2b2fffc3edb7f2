// The heap a test's own process keeps, after garbage collection: for tests that a loop of N calls or
// stream items leaves nothing behind. The runner starts test files without --expose-gc, so the flag is
// set here (V8 exposes `gc` to contexts created after it).
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** `heapUsed` after full collections, with turns of the event loop between them (finalizers, weak refs). */
export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setImmediate(resolve))
  }
  gc()
  return process.memoryUsage().heapUsed
}

/**
 * Bytes kept per unit of work: heap after GC before and after `work`, divided by `count`. A leak of a
 * few hundred bytes per call shows over 10–20 thousand calls, far above the collector's noise (tens of KB).
 */
export async function retainedPerUnit(count: number, work: () => Promise<void>): Promise<number> {
  const before = await heapAfterGc()
  await work()
  const after = await heapAfterGc()
  return (after - before) / count
}
