// The call observer: a core middleware registered `first`, so it sees every call on every transport,
// including the ones auth, rbac or the rate limit refuse. Per (endpoint, transport) it keeps plain
// counts, made into series at scrape time; only the latency histogram is updated per call.

import type { CallTarget, Middleware, TriviumCall } from '@trivium/core'
import { ERROR_KINDS } from '@trivium/core/internal'
import type { Gauge, Histogram } from 'prom-client'
import { TRANSPORTS } from './channels.js'
import type { Instruments } from './instruments.js'

/** The one label value for endpoint names that are not registered (bounded cardinality). */
export const UNKNOWN_ENDPOINT = '(unknown)'

/**
 * One (endpoint, transport): plain numbers on the hot path, turned into prom-client series when
 * scraped (`Instruments.collectCalls`). prom-client hashes the labels on every `inc()`, even through a
 * `labels()` child, which cost more than the rest of the observer together.
 */
export interface CallSeries {
  readonly endpoint: string
  readonly transport: string
  readonly duration: ReturnType<Histogram<'endpoint' | 'transport'>['labels']>
  readonly streams: ReturnType<Gauge<'endpoint' | 'transport'>['labels']>
  started: number
  finished: number
  /** Finished calls by result code. */
  readonly byCode: Map<string, number>
}

const INTERNAL_CODE = ERROR_KINDS.InternalErrorException.code
const RATE_LIMITED_CODE = ERROR_KINDS.RateLimitExceededException.code

/** `OK`, a Trivium error code (`TRV_*`), or `TRV_INTERNAL` for anything else (bounded). */
export function codeOf(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined
  return typeof code === 'string' && /^TRV_[A-Z_]{1,40}$/.test(code) ? code : INTERNAL_CODE
}

export function callObserver(m: Instruments, known: (endpoint: string) => boolean): Middleware {
  // By protocol, then endpoint name: no key string to build per call.
  const cache = new Map<string, Map<string, CallSeries>>()
  const seriesFor = (call: TriviumCall<unknown, CallTarget>): CallSeries => {
    let byName = cache.get(call.protocol)
    if (byName === undefined) {
      byName = new Map()
      cache.set(call.protocol, byName)
    }
    const cached = byName.get(call.endpoint)
    if (cached !== undefined) return cached
    const endpoint = known(call.endpoint) ? call.endpoint : UNKNOWN_ENDPOINT
    const transport = TRANSPORTS.has(call.protocol) ? call.protocol : 'other'
    const s = m.callSeries(endpoint, transport)
    if (endpoint !== UNKNOWN_ENDPOINT) byName.set(call.endpoint, s)
    return s
  }
  const finish = (s: CallSeries, start: number, code: string): void => {
    s.duration.observe((performance.now() - start) / 1000)
    s.finished++
    s.byCode.set(code, (s.byCode.get(code) ?? 0) + 1)
  }

  // Not an async function: one `then` on the chain's promise instead of an extra promise and await.
  return function triviumMetrics(call, next) {
    const s = seriesFor(call)
    const start = performance.now()
    s.started++
    return next().then(
      (result) => {
        finish(s, start, 'OK')
        if (call.definition.streaming && isAsyncIterable(result)) return trackStream(result, s.streams)
        return result
      },
      (err: unknown) => {
        const code = codeOf(err)
        finish(s, start, code)
        if (code === RATE_LIMITED_CODE) m.rateLimitDenials.labels(s.endpoint, s.transport).inc()
        throw err
      },
    )
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value
    ? typeof value[Symbol.asyncIterator] === 'function'
    : false
}

/** Counts the stream open until its iterator ends, throws or is returned (client cancel, close). */
function trackStream<T>(source: AsyncIterable<T>, gauge: { inc(): void; dec(): void }): AsyncIterable<T> {
  gauge.inc()
  return {
    [Symbol.asyncIterator]() {
      const it = source[Symbol.asyncIterator]()
      let open = true
      const close = () => {
        if (open) {
          open = false
          gauge.dec()
        }
      }
      // Made once per stream and reused by every step: an async next() was a promise, an await and
      // a suspended frame per item, per subscriber of a fanned-out event (bench/fanout).
      const stepped = (r: IteratorResult<T>): IteratorResult<T> => {
        if (r.done) close()
        return r
      }
      const failed = (err: unknown): never => {
        close()
        throw err
      }
      return {
        next() {
          try {
            return Promise.resolve(it.next()).then(stepped, failed)
          } catch (err) {
            close()
            return Promise.reject(err)
          }
        },
        async return(value?: unknown) {
          close()
          return it.return ? it.return(value) : { done: true, value: value as T }
        },
        async throw(err?: unknown) {
          close()
          if (it.throw) return it.throw(err)
          throw err
        },
      }
    },
  }
}
