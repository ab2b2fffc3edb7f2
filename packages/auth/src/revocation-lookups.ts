// Revocation lookups against a table when many calls authenticate at once (thousands of streams
// starting after a restart): at most MAX_IN_FLIGHT queries at a time from one store; lookups that arrive
// while they run wait and go together in the next query (`jti = ANY($1)`). So a burst takes a few
// pooled connections instead of one per call, and the pool's wait no longer ends in 503s.
// Never an older answer: every lookup is answered by a query sent after it began (one of its own, or the
// next batch), so a revocation committed before a lookup began is always seen. Nothing is cached.

/** Queries one store runs at once; a lookup arriving while they run joins the next batch. */
const MAX_IN_FLIGHT = 2
/** Most token ids in one batched query. */
const MAX_BATCH = 1000

interface Waiter {
  resolve(revoked: boolean): void
  reject(err: unknown): void
}

export class RevocationLookups {
  /** Answers which of `jtis` are revoked now (one query). */
  readonly #query: (jtis: string[]) => Promise<Set<string>>
  #inFlight = 0
  /** Lookups waiting for the next batch, by token id (the same id asked twice is asked once). */
  #waiting = new Map<string, Waiter[]>()

  constructor(query: (jtis: string[]) => Promise<Set<string>>) {
    this.#query = query
  }

  contains(jti: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const waiters = this.#waiting.get(jti)
      if (waiters !== undefined) waiters.push({ resolve, reject })
      else this.#waiting.set(jti, [{ resolve, reject }])
      if (this.#inFlight < MAX_IN_FLIGHT) this.#send()
    })
  }

  #send(): void {
    if (this.#waiting.size === 0) return
    const batch = this.#takeBatch()
    this.#inFlight++
    this.#query([...batch.keys()])
      .then(
        (revoked) => {
          for (const [jti, waiters] of batch) for (const w of waiters) w.resolve(revoked.has(jti))
        },
        (err: unknown) => {
          for (const waiters of batch.values()) for (const w of waiters) w.reject(err)
        },
      )
      .finally(() => {
        this.#inFlight--
        this.#send()
      })
  }

  /** The oldest MAX_BATCH waiting ids (all of them, usually); the rest wait for the next query. */
  #takeBatch(): Map<string, Waiter[]> {
    const waiting = this.#waiting
    if (waiting.size <= MAX_BATCH) {
      this.#waiting = new Map()
      return waiting
    }
    const batch = new Map<string, Waiter[]>()
    for (const [jti, waiters] of waiting) {
      if (batch.size === MAX_BATCH) break
      batch.set(jti, waiters)
    }
    for (const jti of batch.keys()) waiting.delete(jti)
    return batch
  }
}
