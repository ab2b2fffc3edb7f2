// A server stream's items sent as the handler's generator yields them, waiting for the socket when the
// carrier's backlog is over the high-water mark (PROTOCOL.md "Streams hold constant memory").
// The pump is callbacks made once per stream, not an async loop: an event fanned out to N subscribers
// costs each stream one `then` on its iterator's step, not an await, a race promise and three closures
// per item (bench/fanout: per-delivery allocation is what the scavenges during a fan-out copy).
import type { EndpointDefinition, WireFormat } from '@trivium/core'
import { FrameType } from '@trivium/wire'
import type { FrameCarrier } from './carrier.js'
import { encodeItem } from './shared-items.js'

const EMPTY = new Uint8Array(0)
const noop = (): void => {}

export interface StreamPump {
  id: number
  definition: EndpointDefinition
  format: WireFormat
  items: AsyncIterable<unknown>
  signal: AbortSignal
  carrier: FrameCarrier
  /** Sends an item's body (compressed when the connection compresses). */
  send(type: number, requestId: number, body: Uint8Array | string): void
  highWaterMark: number
  /** The shutdown's abort reason: rethrown, so the stream ends with an ERROR carrying it. */
  shutdownError: unknown
}

/**
 * Sends items as the generator yields them; waits for the socket when over the high-water mark. Settles
 * when the stream ended (STREAM_END sent), stopped (the signal aborted: at once, without waiting for a
 * generator stuck in an await that ignores the signal; rejects with the shutdown's reason when that was
 * it) or failed (rejects with the generator's or the encoding's error). The generator is returned in
 * every case (its finally runs); that is not awaited.
 */
export function pumpStream(pump: StreamPump): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    new Pump(pump, resolve, reject).start()
  })
}

class Pump {
  readonly #p: StreamPump
  readonly #iterator: AsyncIterator<unknown>
  readonly #resolve: () => void
  readonly #reject: (err: unknown) => void
  #finished = false
  /** The signal aborted: nothing more is asked for or sent; the pump finishes in the next microtask. */
  #stopped = false
  // Made once per stream: each step and each drain reuses them.
  readonly #onStep = (step: IteratorResult<unknown>): void => this.#step(step)
  readonly #onError = (err: unknown): void => this.#finish(err, true)
  readonly #onStopped = (): void => this.#finish(undefined, false)
  // The generator is returned after the abort's dispatch, not within it (as the awaited loop did).
  readonly #onAbort = (): void => {
    this.#stopped = true
    queueMicrotask(this.#onStopped)
  }
  readonly #pull = (): void => this.#next()

  constructor(pump: StreamPump, resolve: () => void, reject: (err: unknown) => void) {
    this.#p = pump
    this.#resolve = resolve
    this.#reject = reject
    this.#iterator = pump.items[Symbol.asyncIterator]()
  }

  start(): void {
    // One listener for the stream's life.
    const signal = this.#p.signal
    if (!signal.aborted) signal.addEventListener('abort', this.#onAbort, { once: true })
    // The first step is asked for even when already stopped (the handler's body starts, as before).
    const step = this.#ask()
    if (step === undefined) return
    if (signal.aborted) {
      // Stopped first: a later rejection of the step is handled here (never unhandled) and ignored.
      step.then(undefined, noop)
      this.#finish(undefined, false)
    } else step.then(this.#onStep, this.#onError)
  }

  /** The iterator's next step as a promise; undefined (and the pump failed) when `next()` throws. */
  #ask(): Promise<IteratorResult<unknown>> | undefined {
    try {
      return Promise.resolve(this.#iterator.next())
    } catch (err) {
      this.#finish(err, true)
      return undefined
    }
  }

  /**
   * After an item (and its drain): the next step, unless the stream stopped or the carrier closed. The
   * abort listener runs within `abort()`: `#stopped` says it without reading `signal.aborted`, whose
   * brand check cost ~1 % of a fan-out's profile.
   */
  #next(): void {
    if (this.#finished || this.#stopped) return
    const p = this.#p
    if (!p.carrier.open) {
      this.#finish(undefined, false)
      return
    }
    this.#ask()?.then(this.#onStep, this.#onError)
  }

  #step(step: IteratorResult<unknown>): void {
    if (this.#finished || this.#stopped) return // stopped while the step was awaited: the item is dropped
    const p = this.#p
    try {
      if (step.done) {
        p.carrier.sendBody(FrameType.STREAM_END, p.id, EMPTY)
        this.#finish(undefined, false)
        return
      }
      p.send(FrameType.STREAM_ITEM, p.id, encodeItem(p.definition, p.format, step.value))
      if (p.carrier.backlog > p.highWaterMark) {
        p.carrier.drain(p.signal).then(this.#pull, this.#onError)
        return
      }
    } catch (err) {
      this.#finish(err, true)
      return
    }
    this.#next()
  }

  /** Ends the pump once: the listener goes, the generator is returned, the promise settles. */
  #finish(err: unknown, failed: boolean): void {
    if (this.#finished) return
    this.#finished = true
    const { signal, shutdownError } = this.#p
    signal.removeEventListener('abort', this.#onAbort)
    // Stops the generator (its finally runs). Not awaited: a generator stuck in an await that ignores
    // call.signal must not hold the connection.
    try {
      this.#iterator.return?.()?.catch?.(noop)
    } catch (thrown) {
      // A return() that throws fails the stream with its error (as a `finally` that throws would).
      this.#reject(thrown)
      return
    }
    if (failed) this.#reject(err)
    else if (signal.aborted && signal.reason === shutdownError) this.#reject(signal.reason)
    else this.#resolve()
  }
}
