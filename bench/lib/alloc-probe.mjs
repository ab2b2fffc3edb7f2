// Preloaded into a bench server (`--import`): V8's sampling heap profiler, collected objects included,
// started on one SIGUSR2 and stopped on the next, which prints `ALLOC <bytes>` (the bytes allocated in
// between, sampled every 512 bytes) on stdout. bench/transports uses it for bytes allocated per
// message (BENCH_ALLOC=1): garbage a call leaves costs GC time that a CPU profile does not put on it.
import { Session } from 'node:inspector'

const session = new Session()
session.connect()
const post = (method, params = {}) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  )
await post('HeapProfiler.enable')

function total(node) {
  let bytes = node.selfSize
  for (const child of node.children) bytes += total(child)
  return bytes
}

let sampling = false
process.on('SIGUSR2', async () => {
  sampling = !sampling
  if (sampling) {
    await post('HeapProfiler.startSampling', {
      samplingInterval: 512,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    })
    process.stdout.write('ALLOC started\n')
    return
  }
  const { profile } = await post('HeapProfiler.stopSampling')
  process.stdout.write(`ALLOC ${total(profile.head)}\n`)
})
