// Runs inside a worker thread: one bcrypt job per message, synchronously (the thread has nothing else to do).
//
// On Linux the thread first lowers its own scheduling priority (nice) by `workerData.nice`: a hash is
// ~300 ms of pure CPU, and when the workers hold every core the main thread (the event loop serving
// requests) must wait for the kernel to take a core back from one of them. At a lower priority the kernel
// gives the core to the event loop as soon as it wakes. Linux's setpriority(2) with a thread id changes that
// thread only; the id comes from /proc/thread-self. Elsewhere (or if anything fails) nothing is changed.
import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import bcrypt from 'bcryptjs'

export interface PasswordWorkerData {
  /** Nice increment for this thread (0 = unchanged), capped at 19. */
  nice: number
}

export interface PasswordJob {
  id: number
  op: 'hash' | 'verify'
  password: string
  hash?: string
  cost?: number
}

export interface PasswordReply {
  id: number
  ok: boolean
  result?: string | boolean
}

/** Lowers the calling thread's priority by `increment` (never raises it). True when the change took. */
function lowerThreadPriority(increment: number): boolean {
  if (!(increment > 0) || process.platform !== 'linux') return false
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
    // Never the main thread's id: setpriority with the process id would slow the event loop itself.
    if (!Number.isInteger(tid) || tid <= 0 || tid === process.pid) return false
    const target = Math.min(19, getPriority(tid) + increment)
    setPriority(tid, target)
    return getPriority(tid) === target
  } catch {
    return false
  }
}

const port = parentPort
if (port) {
  lowerThreadPriority((workerData as PasswordWorkerData | undefined)?.nice ?? 0)
  port.on('message', (job: PasswordJob) => {
    let reply: PasswordReply
    try {
      const result =
        job.op === 'hash'
          ? bcrypt.hashSync(job.password, job.cost)
          : bcrypt.compareSync(job.password, job.hash ?? '')
      reply = { id: job.id, ok: true, result }
    } catch {
      // No message is sent back: it could echo input. A hash that cannot be read does not match.
      reply = job.op === 'verify' ? { id: job.id, ok: true, result: false } : { id: job.id, ok: false }
    }
    port.postMessage(reply)
  })
}
