// The transport-neutral limiter: `check(key, limit)` against a store, with the policy for a store that
// cannot answer (Redis down). The middleware in plugin.ts and any other code use this.

import { ServiceUnavailableException } from '@trivium/core'
import type { FastifyBaseLogger } from 'fastify'
import { SETUP } from '../setup-errors.js'
import { MemoryStore, type RateLimitStore } from './memory-store.js'
import type { RateLimit, RateLimitResult } from './window.js'

/**
 * What to do when the store throws (Redis unreachable or too slow):
 * - `memory` (default): count in a per-instance in-memory store until the store answers again, so every
 *   client is still limited, though each instance then allows up to `requests` on its own;
 * - `open`: allow the request (no headers' counts are meaningful: remaining = requests);
 * - `closed`: refuse it with ServiceUnavailableException (503) `Rate limit store unavailable`.
 */
export type WhenStoreDown = 'memory' | 'open' | 'closed'

export const STORE_UNAVAILABLE_MESSAGE = 'Rate limit store unavailable'

export interface RateLimiterOptions {
  store: RateLimitStore
  whenStoreDown?: WhenStoreDown
  log?: FastifyBaseLogger
  /** Sweep period of the fallback memory store (default 5 minutes). */
  sweepIntervalMs?: number
}

export class RateLimiter {
  readonly store: RateLimitStore
  readonly whenStoreDown: WhenStoreDown
  private readonly log: FastifyBaseLogger | undefined
  private readonly sweepIntervalMs: number | undefined
  private fallback: MemoryStore | undefined
  private down = false

  constructor(options: RateLimiterOptions) {
    const whenStoreDown = options.whenStoreDown ?? 'memory'
    if (whenStoreDown !== 'memory' && whenStoreDown !== 'open' && whenStoreDown !== 'closed') {
      throw SETUP.TRV_PROTECTIONS_WHEN_STORE_DOWN()
    }
    this.store = options.store
    this.whenStoreDown = whenStoreDown
    this.log = options.log
    this.sweepIntervalMs = options.sweepIntervalMs
  }

  /** True while the store is failing (set on the first failure, cleared on the next success). */
  get storeDown(): boolean {
    return this.down
  }

  /** Counts one request for `key` under `limit`. Never throws for a store failure unless `closed`. */
  check(key: string, limit: RateLimit): RateLimitResult | Promise<RateLimitResult> {
    let outcome: RateLimitResult | Promise<RateLimitResult>
    try {
      outcome = this.store.hit(key, limit)
    } catch (err) {
      return this.onFailure(err, key, limit)
    }
    if (!(outcome instanceof Promise)) return outcome
    return outcome.then(
      (result) => {
        if (this.down) this.recovered()
        return result
      },
      (err: unknown) => this.onFailure(err, key, limit),
    )
  }

  private onFailure(err: unknown, key: string, limit: RateLimit): RateLimitResult {
    if (!this.down) {
      this.down = true
      // Logged once per outage, not once per request.
      this.log?.error(
        { err },
        `@trivium/protections: rate-limit store failed; whenStoreDown=${this.whenStoreDown}`,
      )
    }
    switch (this.whenStoreDown) {
      case 'open':
        return {
          isAllowed: true,
          remaining: limit.requests,
          resetTime: Date.now() + limit.windowMs,
          retryAfter: 0,
          limit: limit.requests,
        }
      case 'closed':
        throw new ServiceUnavailableException(STORE_UNAVAILABLE_MESSAGE)
      default:
        if (this.fallback === undefined) {
          const options = this.sweepIntervalMs === undefined ? {} : { sweepIntervalMs: this.sweepIntervalMs }
          this.fallback = new MemoryStore(options)
        }
        return this.fallback.hit(key, limit)
    }
  }

  private recovered(): void {
    this.down = false
    this.log?.info('@trivium/protections: rate-limit store answers again')
    this.fallback?.close()
    this.fallback = undefined
  }

  async close(): Promise<void> {
    this.fallback?.close()
    this.fallback = undefined
    await this.store.close?.()
  }
}
