// A small pool of worker threads for bcrypt. A cost-12 hash is ~300 ms of CPU in pure JS; on the main
// thread it would stall every other request. Workers are started lazily, kept `unref`'d while idle (so an
// idle pool never keeps a process alive) and `ref`'d while they run a job.

import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import type { Worker } from 'node:worker_threads'
import { ServiceUnavailableException } from '@trivium/wire/errors'
import { InvalidArgumentError, PasswordWorkerError } from './errors.js'
import type { PasswordJob, PasswordReply, PasswordWorkerData } from './password-worker.js'

export interface PasswordPoolOptions {
  /** Worker threads (default: available cores − 1, at least 2, at most 4). */
  poolSize?: number
  /** Jobs waiting for a worker before new ones are refused with ServiceUnavailableException (default 1000). */
  maxQueue?: number
  /**
   * How much lower than the process the workers' OS scheduling priority is, as a nice increment 0–19
   * (default 10; Linux only, elsewhere ignored). Applies to workers started after the call.
   */
  workerNice?: number
  /** A worker idle this long (ms) is stopped; the next job starts one again (default 15000). */
  workerIdleMs?: number
}

interface Job {
  message: PasswordJob
  resolve: (value: string | boolean) => void
  reject: (err: Error) => void
}

interface Slot {
  worker: Worker
  job: Job | undefined
  /** Stops the worker once it has been idle for the pool's idle time (unref'd; cleared by the next job). */
  idleTimer: NodeJS.Timeout | undefined
}

/**
 * A worker idle this long is stopped: each holds a V8 isolate (~7–12 MiB of RSS) that a service
 * logging in a few users a minute would otherwise keep for good (bench/README.md, "bench/memory").
 * The next job starts one again (tens of ms, against a hash's ~300 ms).
 */
export const DEFAULT_WORKER_IDLE_MS = 15_000

export const DEFAULT_MAX_QUEUE = 1000
export const DEFAULT_WORKER_NICE = 10
export const BUSY_MESSAGE = 'Password service is busy, try again later'

export function defaultPoolSize(): number {
  return Math.min(4, Math.max(2, availableParallelism() - 1))
}

const WORKER_URL = new URL('./password-worker.js', import.meta.url)

// node:worker_threads is loaded when the first worker starts, not when @trivium/crypto is imported
// (bench/README.md, "Cold import").
let WorkerClass: typeof Worker | undefined
function workerClass(): typeof Worker {
  WorkerClass ??= (
    createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads')
  ).Worker
  return WorkerClass
}

export class PasswordPool {
  #size: number
  #maxQueue: number
  #nice: number
  #slots: Slot[] = []
  #queue: Job[] = []
  #nextId = 1
  #idleMs: number

  constructor(options: PasswordPoolOptions = {}) {
    this.#size = defaultPoolSize()
    this.#maxQueue = DEFAULT_MAX_QUEUE
    this.#nice = DEFAULT_WORKER_NICE
    this.#idleMs = DEFAULT_WORKER_IDLE_MS
    this.configure(options)
  }

  configure(options: PasswordPoolOptions): void {
    if (options.poolSize !== undefined) {
      if (!Number.isInteger(options.poolSize) || options.poolSize < 1 || options.poolSize > 64) {
        throw new InvalidArgumentError('@trivium/crypto: poolSize must be an integer from 1 to 64')
      }
      this.#size = options.poolSize
    }
    if (options.maxQueue !== undefined) {
      if (!Number.isInteger(options.maxQueue) || options.maxQueue < 0) {
        throw new InvalidArgumentError('@trivium/crypto: maxQueue must be a non-negative integer')
      }
      this.#maxQueue = options.maxQueue
    }
    if (options.workerNice !== undefined) {
      if (!Number.isInteger(options.workerNice) || options.workerNice < 0 || options.workerNice > 19) {
        throw new InvalidArgumentError('@trivium/crypto: workerNice must be an integer from 0 to 19')
      }
      this.#nice = options.workerNice
    }
    if (options.workerIdleMs !== undefined) {
      const ms = options.workerIdleMs
      if (!Number.isInteger(ms) || ms < 1 || ms > 2_147_483_647) {
        throw new InvalidArgumentError(
          '@trivium/crypto: workerIdleMs must be an integer from 1 to 2147483647',
        )
      }
      this.#idleMs = ms
    }
  }

  get size(): number {
    return this.#size
  }

  /** Workers currently started (0 before the first job and after shutdown). */
  get started(): number {
    return this.#slots.length
  }

  run(message: Omit<PasswordJob, 'id'>): Promise<string | boolean> {
    const canStartNow = this.#slots.length < this.#size || this.#slots.some((slot) => !slot.job)
    if (!canStartNow && this.#queue.length >= this.#maxQueue) {
      return Promise.reject(new ServiceUnavailableException(BUSY_MESSAGE))
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ message: { ...message, id: this.#nextId++ }, resolve, reject })
      this.#dispatch()
    })
  }

  /** Terminates every worker; jobs in flight or queued are rejected. The pool restarts on the next job. */
  async shutdown(): Promise<void> {
    const slots = this.#slots
    const queued = this.#queue
    this.#slots = []
    this.#queue = []
    const error = new PasswordWorkerError('Password workers were shut down')
    for (const job of queued) job.reject(error)
    await Promise.all(
      slots.map((slot) => {
        clearTimeout(slot.idleTimer)
        slot.job?.reject(error)
        slot.job = undefined
        slot.worker.removeAllListeners()
        slot.worker.on('error', () => {})
        return slot.worker.terminate()
      }),
    )
  }

  #dispatch(): void {
    for (let job = this.#queue[0]; job !== undefined; job = this.#queue[0]) {
      let slot = this.#slots.find((s) => !s.job)
      if (!slot) {
        if (this.#slots.length >= this.#size) return
        slot = this.#spawn()
      }
      this.#queue.shift()
      slot.job = job
      clearTimeout(slot.idleTimer)
      slot.idleTimer = undefined
      slot.worker.ref()
      slot.worker.postMessage(job.message)
    }
  }

  #spawn(): Slot {
    const workerData: PasswordWorkerData = { nice: this.#nice }
    const worker = new (workerClass())(WORKER_URL, { name: 'trivium-password', workerData })
    const slot: Slot = { worker, job: undefined, idleTimer: undefined }
    worker.unref()
    worker.on('message', (reply: PasswordReply) => {
      const job = slot.job
      slot.job = undefined
      worker.unref()
      this.#retireWhenIdle(slot)
      if (job && job.message.id === reply.id) {
        if (reply.ok && reply.result !== undefined) job.resolve(reply.result)
        else job.reject(new PasswordWorkerError('Password operation failed'))
      }
      this.#dispatch()
    })
    const fail = () => {
      const index = this.#slots.indexOf(slot)
      if (index === -1) return
      this.#slots.splice(index, 1)
      clearTimeout(slot.idleTimer)
      slot.job?.reject(new PasswordWorkerError('Password worker stopped unexpectedly'))
      slot.job = undefined
      worker.removeAllListeners()
      worker.on('error', () => {})
      void worker.terminate()
      this.#dispatch()
    }
    worker.on('error', fail)
    worker.on('exit', fail)
    this.#slots.push(slot)
    return slot
  }

  #retireWhenIdle(slot: Slot): void {
    clearTimeout(slot.idleTimer)
    slot.idleTimer = setTimeout(() => {
      const index = this.#slots.indexOf(slot)
      if (slot.job !== undefined || index === -1) return
      this.#slots.splice(index, 1)
      slot.worker.removeAllListeners()
      slot.worker.on('error', () => {})
      void slot.worker.terminate()
    }, this.#idleMs)
    slot.idleTimer.unref()
  }
}
