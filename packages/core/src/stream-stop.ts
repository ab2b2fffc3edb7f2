// What ends a stream early (an abort, a revocation, the shutdown, its deadline) and each step the stream
// waits for. `Promise.race([next, stopped])` per item adds a reaction to `stopped`, a promise that stays
// pending for the stream's life, so every item delivered stays in memory until the stream ends (~360 B
// per item: issue 44). Here the stop holds only the callbacks of the steps being waited for, each removed
// when its step settles: a stream holds the same memory after 10 items or 10 million (PROTOCOL.md "Streams
// hold constant memory").

/** What `StreamStop.wait` resolves with when the stop came first. */
export const STOPPED: unique symbol = Symbol('stopped')

export class StreamStop<R = unknown> {
  #stopped = false
  #reason: R | undefined
  /** The waits in progress (one, in a stream's loop): their way to end at the stop. */
  readonly #waiting = new Set<() => void>()

  get stopped(): boolean {
    return this.#stopped
  }

  /** The reason given to `stop()` (undefined before). */
  get reason(): R | undefined {
    return this.#reason
  }

  /** Ends the waits in progress and every later one; the first reason stays. */
  stop(reason: R): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#reason = reason
    for (const wake of this.#waiting) wake()
    this.#waiting.clear()
  }

  /**
   * `step`'s value, or STOPPED if the stop comes first (or came before). A rejection of `step` after the
   * stop is handled here (never unhandled) and ignored.
   */
  wait<T>(step: PromiseLike<T>): Promise<T | typeof STOPPED> {
    if (this.#stopped) {
      step.then(undefined, noop)
      return Promise.resolve(STOPPED)
    }
    return new Promise<T | typeof STOPPED>((resolve, reject) => {
      const wake = (): void => resolve(STOPPED)
      this.#waiting.add(wake)
      step.then(
        (value) => {
          this.#waiting.delete(wake)
          resolve(value)
        },
        (err: unknown) => {
          this.#waiting.delete(wake)
          reject(err)
        },
      )
    })
  }
}

function noop(): void {}
