// One subscriber of an in-process event source, as an async iterator: what it holds is this object, its
// queued events and one abort listener (PROTOCOL.md "Streams hold constant memory"). A subscriber that
// falls `maxPending` events behind (its client reads slower than events come) is ended with a typed
// error instead of queueing without bound (demo README "Writes, events and retries").
import { ServiceUnavailableException } from '@trivium/core'

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })

/** The resolve function of the promise `new Promise(capture)` just made (no executor closure per `next()`). */
let captured: ((result: IteratorResult<never>) => void) | undefined
function capture(resolve: (result: IteratorResult<never>) => void): void {
  captured = resolve
}

/** Events one subscriber may have waiting before its stream is ended (demo README). */
export const MAX_PENDING_EVENTS = 1000

/** The error that ends a subscriber `max` events behind. */
export function fellBehindError(max: number): ServiceUnavailableException {
  return new ServiceUnavailableException(
    `Event stream fell more than ${max} events behind: watch again and reload what you show`,
  )
}

export class EventQueue<T> implements AsyncIterableIterator<T> {
  readonly #subscribers: Set<EventQueue<T>>
  readonly #signal: AbortSignal
  /** Events not yet taken, oldest first (undefined until one waits: most are taken as they come). */
  #queue: T[] | undefined
  #waiting: ((result: IteratorResult<T>) => void) | undefined
  #started = false
  #ended = false
  /** Set when the subscriber fell too far behind: the next `next()` rejects with it, once. */
  #failure: Error | undefined
  readonly #maxPending: number
  readonly #onAbort = (): void => this.end()

  constructor(subscribers: Set<EventQueue<T>>, signal: AbortSignal, maxPending = MAX_PENDING_EVENTS) {
    this.#subscribers = subscribers
    this.#signal = signal
    this.#maxPending = maxPending
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  /**
   * Delivers `value` to the waiting `next()`, or queues it; past `maxPending` waiting events the
   * subscription ends (queue dropped) and the next `next()` rejects with `fellBehindError`. `step`, when
   * given, is `{ done: false, value }` frozen, made once for every subscriber of one event.
   */
  push(value: T, step?: IteratorYieldResult<T>): void {
    const waiting = this.#waiting
    if (waiting !== undefined) {
      this.#waiting = undefined
      waiting(step ?? { done: false, value })
    } else if (this.#queue === undefined) this.#queue = [value]
    else if (this.#queue.length < this.#maxPending) this.#queue.push(value)
    else {
      this.end()
      this.#failure = fellBehindError(this.#maxPending)
    }
  }

  next(): Promise<IteratorResult<T>> {
    // Subscribed on the first `next()`, as a generator's body would start: nothing is held before.
    if (!this.#started) this.#start()
    const failure = this.#failure
    if (failure !== undefined) {
      this.#failure = undefined
      return Promise.reject(failure)
    }
    const queue = this.#queue
    if (queue !== undefined && queue.length > 0) {
      const value = queue.shift() as T
      if (queue.length === 0) this.#queue = undefined // a subscriber that caught up holds no array
      return Promise.resolve({ done: false, value })
    }
    if (this.#ended) return Promise.resolve(DONE)
    const next = new Promise<IteratorResult<T>>(capture)
    this.#waiting = captured as (result: IteratorResult<T>) => void
    captured = undefined
    return next
  }

  return(): Promise<IteratorResult<T>> {
    this.#failure = undefined
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
