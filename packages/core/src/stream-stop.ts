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
  /**
   * The waits in progress: their way to end at the stop. A stream's loop has one at a time, kept in a
   * field; a Set is made only for a second one at once (a Set per stream cost ~200 B per open
   * subscription: bench/fanout).
   */
  #wake: (() => void) | undefined = undefined
  #more: Set<() => void> | undefined = undefined

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
    const wake = this.#wake
    const more = this.#more
    this.#wake = undefined
    this.#more = undefined
    wake?.()
    if (more !== undefined) for (const other of more) other()
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
      this.#add(wake)
      step.then(
        (value) => {
          this.#remove(wake)
          resolve(value)
        },
        (err: unknown) => {
          this.#remove(wake)
          reject(err)
        },
      )
    })
  }

  #add(wake: () => void): void {
    if (this.#wake === undefined) this.#wake = wake
    else {
      this.#more ??= new Set()
      this.#more.add(wake)
    }
  }

  #remove(wake: () => void): void {
    if (this.#wake === wake) this.#wake = undefined
    else this.#more?.delete(wake)
  }
}

function noop(): void {}
