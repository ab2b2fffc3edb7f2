// The revocation list (add(jti, optional ttl), contains(jti), remove(jti), cleanup(); README
// "Revocation") and its in-memory variant. Redis: redis-revocation.ts; SQL: `@trivium/auth/sql`.
//
// Failure policy: a store that cannot answer never lets a revoked token through. Every operation of
// the Redis and SQL stores rejects with ServiceUnavailableException (503, TRV_SERVICE_UNAVAILABLE)
// when the store is unreachable; the next request tries again, so service recovers by itself.

import { ExpiringSet } from './expiring-set.js'
import type { Clock } from './tokens.js'

export interface RevocationStore {
  /** Lists a jti; with `ttlSeconds` the entry disappears after that many seconds. */
  add(jti: string, ttlSeconds?: number): Promise<void>
  /** True while the jti is listed (and its entry has not expired). */
  contains(jti: string): Promise<boolean>
  /** Unlists a jti: the token is valid again if not expired. */
  remove(jti: string): Promise<void>
  /** Deletes expired entries; resolves to how many were deleted (when the store knows). */
  cleanup(): Promise<number>
  /** Releases timers or connections the store opened itself. */
  close?(): Promise<void>
}

/**
 * A store that keeps the list durably and can hand out all of it: the source of truth that copies (the
 * Redis list, the in-memory mirror) are rebuilt from (`SqlRevocationStore`; README "Durable source").
 */
export interface DurableRevocationStore extends RevocationStore {
  /**
   * Every entry not expired now: [jti, expiry in ms since the epoch or null (never)]; with
   * `addedSinceMs`, only those added at or after that time.
   */
  entries(addedSinceMs?: number): Promise<[string, number | null][]>
}

export const STORE_UNAVAILABLE = 'Revocation list is unavailable'

export function checkJti(jti: unknown): string {
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 512) {
    throw new TypeError('@trivium/auth: jti must be a non-empty string of at most 512 characters')
  }
  return jti
}

export function checkTtl(ttl: unknown): number | undefined {
  if (ttl === undefined) return undefined
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw new TypeError('@trivium/auth: ttlSeconds must be a positive number')
  }
  return Math.ceil(ttl)
}

export interface MemoryRevocationStoreOptions {
  clock?: Clock
  /** Sweep expired entries every this many ms (default 60 000; 0 disables the timer). */
  sweepIntervalMs?: number
}

/** In-process list: a Map of jti → expiry (ms) or null. For one instance; use Redis or SQL for several. */
export class MemoryRevocationStore implements RevocationStore {
  readonly #listed = new ExpiringSet()
  private readonly clock: Clock
  /** The clock as `this.clock()` calls it, for lookups that read it only when they find an entry. */
  readonly #now = (): number => this.clock()
  private readonly timer: NodeJS.Timeout | undefined

  constructor(options: MemoryRevocationStoreOptions = {}) {
    this.clock = options.clock ?? Date.now
    const interval = options.sweepIntervalMs ?? 60_000
    if (interval > 0) {
      // The memory sweep only (a subclass's cleanup may reach a store that can fail).
      this.timer = setInterval(() => this.#listed.sweep(this.clock()), interval)
      this.timer.unref()
    }
  }

  async add(jti: string, ttlSeconds?: number): Promise<void> {
    const ttl = checkTtl(ttlSeconds)
    this.#listed.set(checkJti(jti), ttl === undefined ? null : this.clock() + ttl * 1000)
  }

  async contains(jti: string): Promise<boolean> {
    return this.containsSync(jti)
  }

  /** Synchronous lookup (the middleware's fast path for this store). */
  containsSync(jti: string): boolean {
    return this.#listed.has(jti, this.#now)
  }

  async remove(jti: string): Promise<void> {
    this.#listed.delete(jti)
  }

  /** Puts entries in as they are: [jti, expiry in ms since the epoch or null (never)]. */
  protected restore(entries: Iterable<[string, number | null]>): void {
    for (const [jti, expiresAt] of entries) this.#listed.set(jti, expiresAt)
  }

  async cleanup(): Promise<number> {
    return this.#listed.sweep(this.clock())
  }

  get size(): number {
    return this.#listed.size
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
  }
}
