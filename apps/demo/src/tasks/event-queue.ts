// One subscriber of an in-process event source, as an async iterator: what it holds is this object, its
// queued events and one abort listener (PROTOCOL.md "Streams hold constant memory").

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })

export class EventQueue<T> implements AsyncIterableIterator<T> {
  readonly #subscribers: Set<EventQueue<T>>
  readonly #signal: AbortSignal
  /** Events not yet taken, oldest first (undefined until one waits: most are taken as they come). */
  #queue: T[] | undefined
  #waiting: ((result: IteratorResult<T>) => void) | undefined
  #started = false
  #ended = false
  readonly #onAbort = (): void => this.end()

  constructor(subscribers: Set<EventQueue<T>>, signal: AbortSignal) {
    this.#subscribers = subscribers
    this.#signal = signal
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  /** Delivers `value` to the waiting `next()`, or queues it. */
  push(value: T): void {
    const waiting = this.#waiting
    if (waiting !== undefined) {
      this.#waiting = undefined
      waiting({ done: false, value })
    } else if (this.#queue === undefined) this.#queue = [value]
    else this.#queue.push(value)
  }

  next(): Promise<IteratorResult<T>> {
    // Subscribed on the first `next()`, as a generator's body would start: nothing is held before.
    if (!this.#started) this.#start()
    const queue = this.#queue
    if (queue !== undefined && queue.length > 0) {
      const value = queue.shift() as T
      return Promise.resolve({ done: false, value })
    }
    if (this.#ended) return Promise.resolve(DONE)
    return new Promise((resolve) => {
      this.#waiting = resolve
    })
  }

  return(): Promise<IteratorResult<T>> {
    this.end()
    return Promise.resolve(DONE)
  }

  /** Stops the subscription: queued events are dropped, a waiting `next()` ends the iteration. */
  end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#started = true
    this.#queue = undefined
    this.#subscribers.delete(this)
    this.#signal.removeEventListener('abort', this.#onAbort)
    const waiting = this.#waiting
    this.#waiting = undefined
    waiting?.(DONE)
  }

  #start(): void {
    this.#started = true
    if (this.#signal.aborted) {
      this.#ended = true
      return
    }
    this.#subscribers.add(this)
    this.#signal.addEventListener('abort', this.#onAbort, { once: true })
  }
}
