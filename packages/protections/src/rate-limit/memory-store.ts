// In-process counters: one Map entry per (client, endpoint) key, swept periodically so that a flood of
// distinct clients cannot grow memory without bound (README "Rate limiting").

import { SETUP } from '../setup-errors.js'
import { evaluateWindow, type RateLimit, type RateLimitResult, type WindowState } from './window.js'

/** Where counters live. `hit` evaluates one request atomically (for its key) and returns the verdict. */
export interface RateLimitStore {
  hit(key: string, limit: RateLimit): RateLimitResult | Promise<RateLimitResult>
  /** Stops timers and releases what the store owns (not a Redis client it was given). */
  close?(): void | Promise<void>
}

export interface MemoryStoreOptions {
  /** Sweep period in ms (default 5 minutes); 0 disables the timer (call `sweep()` yourself). */
  sweepIntervalMs?: number
  /** Clock in ms since the epoch (default `Date.now`); for tests. */
  clock?: () => number
}

export const DEFAULT_SWEEP_INTERVAL_MS = 5 * 60_000

export class MemoryStore implements RateLimitStore {
  private readonly counters = new Map<string, WindowState>()
  private readonly clock: () => number
  private timer: NodeJS.Timeout | undefined

  constructor(options: MemoryStoreOptions = {}) {
    const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS
    if (!Number.isSafeInteger(interval) || interval < 0) {
      throw SETUP.TRV_PROTECTIONS_SWEEP_INTERVAL()
    }
    this.clock = options.clock ?? Date.now
    if (interval > 0) {
      this.timer = setInterval(() => this.sweep(), interval)
      this.timer.unref()
    }
  }

  hit(key: string, limit: RateLimit): RateLimitResult {
    const now = this.clock()
    let state = this.counters.get(key)
    if (state === undefined) {
      state = { count: 0, windowStart: now, windowMs: limit.windowMs }
      this.counters.set(key, state)
    }
    return evaluateWindow(state, limit, now)
  }

  /** Drops every counter whose window has passed (now - windowStart > window). Returns how many. */
  sweep(now: number = this.clock()): number {
    let removed = 0
    for (const [key, state] of this.counters) {
      if (now - state.windowStart > state.windowMs) {
        this.counters.delete(key)
        removed++
      }
    }
    return removed
  }

  /** Number of live counters. */
  get size(): number {
    return this.counters.size
  }

  close(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    this.counters.clear()
  }
}
