// Revoked token ids with their expiry (ms since the epoch, or null: never), as the memory store and the
// Redis store's mirror both keep them: an expired entry answers false and is dropped when looked up or
// swept.
export class ExpiringSet {
  readonly #entries = new Map<string, number | null>()

  /**
   * Whether `key` is present and not expired at `now`; an expired entry is dropped. `now` may be a clock,
   * read only for an entry that expires: most lookups find no entry, and a clock reading (`Date.now`, a
   * runtime call) cost ~190 instructions of every authenticated frame call (bench/README.md "Fourth pass").
   */
  has(key: string, now: number | (() => number)): boolean {
    const expiresAt = this.#entries.get(key)
    if (expiresAt === undefined) return false
    if (expiresAt !== null && expiresAt <= (typeof now === 'number' ? now : now())) {
      this.#entries.delete(key)
      return false
    }
    return true
  }

  set(key: string, expiresAt: number | null): void {
    this.#entries.set(key, expiresAt)
  }

  delete(key: string): void {
    this.#entries.delete(key)
  }

  /** Drops every entry expired at `now`; returns how many. */
  sweep(now: number): number {
    let removed = 0
    for (const [key, expiresAt] of this.#entries) {
      if (expiresAt !== null && expiresAt <= now) {
        this.#entries.delete(key)
        removed++
      }
    }
    return removed
  }

  /** Replaces every entry. */
  replace(entries: Iterable<[string, number | null]>): void {
    this.#entries.clear()
    for (const [key, expiresAt] of entries) this.#entries.set(key, expiresAt)
  }

  get size(): number {
    return this.#entries.size
  }
}
