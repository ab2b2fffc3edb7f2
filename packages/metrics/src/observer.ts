// The call observer: a core middleware registered `first`, so it sees every call on every transport,
// including the ones auth, rbac or the rate limit refuse. Series children are looked up once per
// (endpoint, transport) and cached: a call costs two Map lookups, not label hashing.

import type { Middleware, TriviumCall } from '@trivium/core'
import type { Counter, Gauge, Histogram } from 'prom-client'
import { TRANSPORTS } from './channels.js'
import type { Instruments } from './instruments.js'

/** The one label value for endpoint names that are not registered (bounded cardinality). */
export const UNKNOWN_ENDPOINT = '(unknown)'

interface Series {
  duration: ReturnType<Histogram<'endpoint' | 'transport'>['labels']>
  inFlight: ReturnType<Gauge<'endpoint' | 'transport'>['labels']>
  streams: ReturnType<Gauge<'endpoint' | 'transport'>['labels']>
  byCode: Map<string, ReturnType<Counter<'endpoint' | 'transport' | 'code'>['labels']>>
  endpoint: string
  transport: string
}

/** `OK`, a Trivium error code (`TRV_*`), or `TRV_INTERNAL` for anything else (bounded). */
export function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^TRV_[A-Z_]{1,40}$/.test(code) ? code : 'TRV_INTERNAL'
}

export function callObserver(m: Instruments, known: (endpoint: string) => boolean): Middleware {
  const cache = new Map<string, Series>()
  const seriesFor = (call: TriviumCall<any>): Series => {
    const key = `${call.protocol}\0${call.endpoint}`
    let s = cache.get(key)
    if (s) return s
    const endpoint = known(call.endpoint) ? call.endpoint : UNKNOWN_ENDPOINT
    const transport = TRANSPORTS.has(call.protocol) ? call.protocol : 'other'
    s = {
      endpoint,
      transport,
      duration: m.duration.labels(endpoint, transport),
      inFlight: m.callsInFlight.labels(endpoint, transport),
      streams: m.streamsInFlight.labels(endpoint, transport),
      byCode: new Map(),
    }
    if (endpoint !== UNKNOWN_ENDPOINT) cache.set(key, s)
    return s
  }
  const count = (s: Series, code: string) => {
    let c = s.byCode.get(code)
    if (!c) {
      c = m.calls.labels(s.endpoint, s.transport, code)
      s.byCode.set(code, c)
    }
    c.inc()
  }

  return async function triviumMetrics(call, next) {
    const s = seriesFor(call)
    const start = performance.now()
    s.inFlight.inc()
    try {
      const result = await next()
      s.duration.observe((performance.now() - start) / 1000)
      count(s, 'OK')
      if (call.definition.streaming && isAsyncIterable(result)) return trackStream(result, s.streams)
      return result
    } catch (err) {
      s.duration.observe((performance.now() - start) / 1000)
      const code = codeOf(err)
      count(s, code)
      if (code === 'TRV_RATE_LIMITED') m.rateLimitDenials.labels(s.endpoint, s.transport).inc()
      throw err
    } finally {
      s.inFlight.dec()
    }
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function'
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
      return {
        async next() {
          try {
            const r = await it.next()
            if (r.done) close()
            return r
          } catch (err) {
            close()
            throw err
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
