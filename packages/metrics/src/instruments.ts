// Every Trivium metric, created once per registry. Names and units follow Prometheus conventions:
// `_total` counters, `_seconds` durations, base units, snake_case labels.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { CallSeries } from './observer.js'

export const DEFAULT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** A pg.Pool, or anything with the same three counts. */
export interface PoolLike {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
}

export class Instruments {
  readonly calls: Counter<'endpoint' | 'transport' | 'code'>
  readonly duration: Histogram<'endpoint' | 'transport'>
  readonly callsInFlight: Gauge<'endpoint' | 'transport'>
  readonly streamsInFlight: Gauge<'endpoint' | 'transport'>
  readonly connections: Gauge<'transport'>
  readonly framesRejected: Counter<'transport' | 'reason'>
  readonly rateLimitDenials: Counter<'endpoint' | 'transport'>
  readonly authFailures: Counter<'reason'>
  readonly revocations: Counter
  readonly push: Counter<'transport' | 'event'>
  readonly redisReconnects: Counter<'client'>
  readonly busLag: Histogram<'channel'>
  readonly pool: Gauge<'state'>
  private readonly pools: PoolLike[] = []
  private readonly callSeriesList: CallSeries[] = []

  constructor(registry: Registry, buckets: number[]) {
    const registers = [registry]
    const calls = callInstruments(registers, this.callSeriesList, buckets)
    this.calls = calls.calls
    this.duration = calls.duration
    this.callsInFlight = calls.callsInFlight
    this.streamsInFlight = calls.streamsInFlight
    this.connections = new Gauge({
      name: 'trivium_connections_open',
      help: 'Open WebSocket and TCP connections',
      labelNames: ['transport'],
      registers,
    })
    this.framesRejected = new Counter({
      name: 'trivium_frames_rejected_total',
      help: 'Frames refused before reaching an endpoint, by reason',
      labelNames: ['transport', 'reason'],
      registers,
    })
    this.rateLimitDenials = new Counter({
      name: 'trivium_rate_limit_denials_total',
      help: 'Calls refused by the rate limit (TRV_RATE_LIMITED)',
      labelNames: ['endpoint', 'transport'],
      registers,
    })
    this.authFailures = new Counter({
      name: 'trivium_auth_failures_total',
      help: 'Authentication failures by reason (missing, expired, revoked, invalid)',
      labelNames: ['reason'],
      registers,
    })
    this.revocations = new Counter({
      name: 'trivium_auth_revocations_total',
      help: 'Tokens revoked',
      registers,
    })
    this.push = new Counter({
      name: 'trivium_push_messages_total',
      help: 'Server push messages sent or dropped (slow or closed receiver)',
      labelNames: ['transport', 'event'],
      registers,
    })
    this.redisReconnects = new Counter({
      name: 'trivium_redis_reconnects_total',
      help: 'Reconnection attempts of watched Redis clients',
      labelNames: ['client'],
      registers,
    })
    this.busLag = new Histogram({
      name: 'trivium_bus_message_lag_seconds',
      help: 'Time from publish to receipt of Redis bus messages, by bus channel (includes clock skew between hosts)',
      labelNames: ['channel'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    })
    this.pool = poolGauge(registers, this.pools)
  }

  /** The counts of one (endpoint, transport), kept by the call observer and exposed when scraped. */
  callSeries(endpoint: string, transport: string): CallSeries {
    const s: CallSeries = {
      endpoint,
      transport,
      duration: this.duration.labels(endpoint, transport),
      streams: this.streamsInFlight.labels(endpoint, transport),
      started: 0,
      finished: 0,
      byCode: new Map(),
    }
    this.callSeriesList.push(s)
    this.callsInFlight.set({ endpoint, transport }, 0)
    return s
  }

  watchPool(pool: PoolLike): void {
    this.pools.push(pool)
  }
}

/** The per-call instruments; the counts come from each endpoint's CallSeries when scraped. */
function callInstruments(registers: Registry[], series: CallSeries[], buckets: number[]) {
  const calls = new Counter<'endpoint' | 'transport' | 'code'>({
    name: 'trivium_calls_total',
    help: 'Calls by endpoint, transport and result code (OK or the error code, e.g. TRV_VALIDATION)',
    labelNames: ['endpoint', 'transport', 'code'],
    registers,
    collect() {
      this.reset()
      for (const s of series) {
        for (const [code, n] of s.byCode) this.inc({ endpoint: s.endpoint, transport: s.transport, code }, n)
      }
    },
  })
  const duration = new Histogram<'endpoint' | 'transport'>({
    name: 'trivium_call_duration_seconds',
    help: 'Time from the first middleware to the response (a stream: to its first item being ready)',
    labelNames: ['endpoint', 'transport'],
    buckets,
    registers,
  })
  const callsInFlight = new Gauge<'endpoint' | 'transport'>({
    name: 'trivium_calls_in_flight',
    help: 'Calls being handled',
    labelNames: ['endpoint', 'transport'],
    registers,
    collect() {
      for (const s of series)
        this.set({ endpoint: s.endpoint, transport: s.transport }, s.started - s.finished)
    },
  })
  const streamsInFlight = new Gauge<'endpoint' | 'transport'>({
    name: 'trivium_streams_in_flight',
    help: 'Streaming calls open (from the handler returning the stream to its end)',
    labelNames: ['endpoint', 'transport'],
    registers,
  })
  return { calls, duration, callsInFlight, streamsInFlight }
}

/** The PostgreSQL pool gauge: the sum over the watched pools when scraped. */
function poolGauge(registers: Registry[], pools: PoolLike[]): Gauge<'state'> {
  return new Gauge<'state'>({
    name: 'trivium_pg_pool_connections',
    help: 'PostgreSQL pool connections: total, idle, and clients waiting for one',
    labelNames: ['state'],
    registers,
    collect() {
      if (pools.length === 0) return
      let total = 0
      let idle = 0
      let waiting = 0
      for (const p of pools) {
        total += p.totalCount
        idle += p.idleCount
        waiting += p.waitingCount
      }
      this.set({ state: 'total' }, total)
      this.set({ state: 'idle' }, idle)
      this.set({ state: 'waiting' }, waiting)
    },
  })
}
