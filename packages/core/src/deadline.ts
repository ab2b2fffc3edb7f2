// The deadline of one call (PROTOCOL.md "Deadlines"): the earlier of the endpoint's `timeoutMs` and the
// client's timeout (HTTP header, frame metadata), counted from the moment the call is parsed. When it
// passes, `call.signal` aborts and the call is answered TimeoutException, even if the handler ignores
// the signal; a stream ends with that error. One rule for every transport: the HTTP route and the
// frame invoker both build it here and both run their pipeline through `run`.
import {
  deadlineExceededMessage,
  invalidTimeoutMessage,
  parseTimeoutMs,
  TIMEOUT_HEADER,
  TIMEOUT_METADATA_KEY,
} from '@trivium/wire'
import type { HeaderMap, Protocol } from './call.js'
import { TimeoutException, ValidationException } from './errors.js'
import { STOPPED, StreamStop } from './stream-stop.js'
import { isThenable } from './thenable.js'

const HEADER = TIMEOUT_HEADER.toLowerCase()
const noop = (): void => {}

/** Handlers answered at their deadline and still running: frame transports count them until they return. */
const stillRunning = new WeakMap<object, Promise<void>>()

/**
 * Resolves when the handler of a call answered at its deadline returns (undefined when the call was not
 * answered by its deadline). Frame transports keep counting such a call toward `maxInFlight` until then,
 * as they do a cancelled one.
 */
export function handlerSettled(call: object): Promise<void> | undefined {
  return stillRunning.get(call)
}

export class CallDeadline {
  /** The deadline in ms from the start of the call (the earlier of the client's and the endpoint's). */
  readonly ms: number
  /** performance.now() at which it passes. */
  readonly at: number
  #controller: AbortController | undefined
  #error: TimeoutException | undefined

  constructor(ms: number) {
    this.ms = ms
    this.at = performance.now() + ms
  }

  /** Milliseconds left (0 once passed: then `signal` is aborted, even before the timer could run). */
  remaining(): number {
    const left = Math.ceil(this.at - performance.now())
    if (left > 0) return left
    this.#expire()
    return 0
  }

  /**
   * True once the deadline has passed, by the clock: a handler that kept the thread busy past it (the
   * embedded PGlite runs in this thread) gave no timer a chance to run, and its result is late all the
   * same. Passing it aborts `signal`.
   */
  passed(): boolean {
    if (this.#error !== undefined) return true
    if (performance.now() < this.at) return false
    this.#expire()
    return true
  }

  /** Aborted with the TimeoutException when the deadline passes. Made on first use. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#error !== undefined) this.#controller.abort(this.#error)
    }
    return this.#controller.signal
  }

  #expire(): TimeoutException {
    if (this.#error === undefined) {
      this.#error = new TimeoutException(deadlineExceededMessage(this.ms))
      this.#controller?.abort(this.#error)
    }
    return this.#error
  }

  /**
   * `start()` (the rest of the pipeline) bounded by the deadline: a promise settles with TimeoutException
   * at the deadline; a stream's iterator rejects its pending `next()` with it (the whole stream is
   * bounded, the middleware's time included). A result that arrives after the deadline — a value, an
   * error, a stream's item — is dropped for TimeoutException too, also when no timer could run before it
   * (PROTOCOL.md "Deadlines": the late result is dropped). A value answered synchronously in time costs
   * no timer.
   */
  run(call: object, start: () => unknown, streaming: boolean): unknown {
    let result: unknown
    try {
      result = start()
    } catch (err) {
      throw this.passed() ? this.#expire() : err
    }
    if (!streaming && !isThenable(result)) {
      if (this.passed()) throw this.#expire()
      return result
    }
    const wait = Math.max(0, this.at - performance.now())
    if (!streaming) {
      // One promise and one timer per call (no race, no extra handlers): the cheapest bounded await.
      const pending = result as PromiseLike<unknown>
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          // The handler runs on: frame transports keep counting it (handlerSettled) until it returns.
          stillRunning.set(
            call,
            new Promise<void>((done) =>
              pending.then(
                () => done(),
                () => done(),
              ),
            ),
          )
          reject(this.#expire())
        }, wait)
        pending.then(
          (value) => {
            clearTimeout(timer)
            if (this.passed()) reject(this.#expire())
            else resolve(value)
          },
          (err) => {
            clearTimeout(timer)
            reject(this.passed() ? this.#expire() : err)
          },
        )
      })
    }
    let timer: ReturnType<typeof setTimeout> | undefined
    const passed = new StreamStop<TimeoutException>()
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = this.#expire()
        passed.stop(error)
        reject(error)
      }, wait)
    })
    expired.catch(noop)
    const stop = (): void => clearTimeout(timer)
    if (isThenable(result)) {
      return Promise.race([result, expired]).then(
        (items) => bounded(items as AsyncIterable<unknown>, passed, stop, this),
        (err) => {
          stop()
          throw err
        },
      )
    }
    return bounded(result as AsyncIterable<unknown>, passed, stop, this)
  }

  /** The TimeoutException when the deadline has passed by the clock (see `passed`), else undefined. */
  late(): TimeoutException | undefined {
    return this.passed() ? this.#expire() : undefined
  }
}

/**
 * A stream whose every `next()` ends at the deadline (an item that comes after it, the timer not yet
 * run, is dropped for the TimeoutException too); ending or stopping it clears the timer. Each step waits
 * through `passed` (no race against a promise pending for the stream's life: stream-stop.ts).
 */
function bounded(
  items: AsyncIterable<unknown>,
  passed: StreamStop<TimeoutException>,
  stop: () => void,
  deadline: CallDeadline,
): AsyncIterable<unknown> {
  const inner = items[Symbol.asyncIterator]()
  const iterator: AsyncIterator<unknown> = {
    next() {
      return passed.wait(Promise.resolve(inner.next())).then(
        (r) => {
          if (r === STOPPED) throw passed.reason
          // Its end, too: a generator that saw `call.signal` aborted and returned ends with the error.
          const late = deadline.late()
          if (r.done || late) stop()
          if (late) throw late
          return r
        },
        (err) => {
          stop()
          throw err
        },
      )
    },
    return(value?: unknown) {
      stop()
      return inner.return ? inner.return(value) : Promise.resolve({ done: true, value })
    },
  }
  return { [Symbol.asyncIterator]: () => iterator }
}

/**
 * The call's deadline, or undefined when neither the client nor the endpoint sets one. The client's
 * value is read from the `Trivium-Timeout-Ms` header on HTTP and from the `timeout_ms` metadata entry on
 * frames; an invalid one is a ValidationException naming it.
 */
export function callDeadline(
  protocol: Protocol,
  headers: HeaderMap | undefined,
  metadata: Record<string, string> | undefined,
  endpointTimeoutMs: number | undefined,
  /** The metadata's `timeout_ms` as the transport read it with the block (null: none); absent: read here. */
  given?: string | null,
): CallDeadline | undefined {
  let client: number | undefined
  if (protocol === 'http') {
    const raw = headers?.[HEADER]
    if (raw !== undefined) {
      client = typeof raw === 'string' ? parseTimeoutMs(raw) : undefined
      if (client === undefined) throw new ValidationException(invalidTimeoutMessage('header'))
    }
  } else if (metadata !== undefined) {
    // A map without a prototype is a dictionary: a read, of a key it lacks too, costs ~130–240
    // instructions, so a transport that reads its blocks once hands the value (bench/README.md "Fourth pass").
    const raw = given === undefined ? metadata[TIMEOUT_METADATA_KEY] : (given ?? undefined)
    if (raw !== undefined) {
      client = parseTimeoutMs(raw)
      if (client === undefined) throw new ValidationException(invalidTimeoutMessage('metadata'))
    }
  }
  const ms =
    client === undefined
      ? endpointTimeoutMs
      : endpointTimeoutMs === undefined
        ? client
        : Math.min(client, endpointTimeoutMs)
  return ms === undefined ? undefined : new CallDeadline(ms)
}
