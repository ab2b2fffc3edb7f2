// @trivium/metrics: Prometheus metrics (prom-client) for every transport. A `first` core middleware
// observes calls; diagnostics channels bring connection, frame, push and auth events. GET /metrics is
// off unless `expose` or `listen` is given.
import type { AddressInfo } from 'node:net'
import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { Registry } from 'prom-client'
import { metricsRoute, metricsServer } from './expose.js'
import { DEFAULT_BUCKETS, Instruments, type PoolLike } from './instruments.js'
import { callObserver } from './observer.js'
import { registerProcessMetrics } from './process-metrics.js'
import { SETUP } from './setup-errors.js'
import { subscribeChannels } from './subscriptions.js'

export { CHANNELS } from './channels.js'
export { bearerMatches, METRICS_TOKEN_MESSAGE } from './expose.js'
export { DEFAULT_BUCKETS, Instruments, type PoolLike } from './instruments.js'
export { codeOf, UNKNOWN_ENDPOINT } from './observer.js'

export const METRICS_MIDDLEWARE_NAME = 'metrics'

/** An ioredis client (or anything emitting `reconnecting`). */
export interface ReconnectingClient {
  on(event: 'reconnecting', listener: (...args: unknown[]) => void): unknown
}

export interface TriviumMetricsOptions {
  /** Serve GET `path` on this Fastify server (default false). */
  expose?: boolean
  /** Serve GET `path` on a separate address instead (e.g. `{ host: '10.0.0.5', port: 9464 }`). */
  listen?: { host?: string; port: number }
  /** Path of the exposition (default `/metrics`). */
  path?: string
  /** Bearer token the scraper must send (at least 16 characters); none by default. */
  token?: string
  /** Registry to use (default: a new one per server). */
  registry?: Registry
  /** Histogram buckets of `trivium_call_duration_seconds`, in seconds. */
  buckets?: number[]
  /**
   * Also serve prom-client's process metrics (`process_resident_memory_bytes`, `nodejs_heap_size_used_bytes`,
   * `nodejs_eventloop_lag_seconds`, `nodejs_active_handles`, CPU, GC …; default false: they observe the
   * whole process, which is the host's to decide). Collected once per process, whatever the number of apps.
   */
  defaultMetrics?: boolean
  /** A pg.Pool (or the same counts) for `trivium_pg_pool_connections`. */
  pool?: PoolLike
  /** Redis clients by name, for `trivium_redis_reconnects_total{client}`. */
  redis?: Record<string, ReconnectingClient>
}

export interface TriviumMetrics {
  readonly registry: Registry
  readonly instruments: Instruments
  watchPool(pool: PoolLike): void
  watchRedis(name: string, client: ReconnectingClient): void
  /** The separate listen address (when `listen` was given). */
  address(): AddressInfo | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: TriviumMetrics
  }
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const METRICS_OPTIONS = optionNames<TriviumMetricsOptions>()(
  'expose',
  'listen',
  'path',
  'token',
  'registry',
  'buckets',
  'defaultMetrics',
  'pool',
  'redis',
)

function validate(o: TriviumMetricsOptions) {
  if (typeof o !== 'object' || o === null) throw SETUP.TRV_METRICS_OPTIONS()
  refuseUnknownOptions('@trivium/metrics', o, METRICS_OPTIONS)
  const expose = o.expose ?? false
  if (typeof expose !== 'boolean') throw SETUP.TRV_METRICS_EXPOSE()
  const path = o.path ?? '/metrics'
  if (typeof path !== 'string' || !path.startsWith('/')) throw SETUP.TRV_METRICS_PATH()
  if (o.token !== undefined && (typeof o.token !== 'string' || o.token.length < 16))
    throw SETUP.TRV_METRICS_TOKEN()
  if (o.listen !== undefined) {
    const port = o.listen?.port
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw SETUP.TRV_METRICS_LISTEN_PORT()
    if (o.listen.host !== undefined && typeof o.listen.host !== 'string')
      throw SETUP.TRV_METRICS_LISTEN_HOST()
  }
  if (o.defaultMetrics !== undefined && typeof o.defaultMetrics !== 'boolean')
    throw SETUP.TRV_METRICS_DEFAULT_METRICS()
  const buckets = o.buckets ?? DEFAULT_BUCKETS
  if (
    !Array.isArray(buckets) ||
    buckets.length === 0 ||
    // The first bucket has no predecessor: 0 stands in for it, and `b > 0` is required anyway.
    buckets.some((b, i) => typeof b !== 'number' || !(b > 0) || b <= (buckets[i - 1] ?? 0))
  )
    throw SETUP.TRV_METRICS_BUCKETS()
  return { expose, path, buckets: [...buckets] }
}

const metrics: FastifyPluginAsync<TriviumMetricsOptions> = async (fastify, options = {}) => {
  const { expose, path, buckets } = validate(options)
  const registry = options.registry ?? new Registry()
  if (options.defaultMetrics) registerProcessMetrics(registry)
  const instruments = new Instruments(registry, buckets)
  if (options.pool) instruments.watchPool(options.pool)
  const watchRedis = (name: string, client: ReconnectingClient) => {
    const counter = instruments.redisReconnects.labels(name)
    counter.inc(0) // the series exists (at 0) before the first reconnect
    client.on('reconnecting', () => counter.inc())
  }
  for (const [name, client] of Object.entries(options.redis ?? {})) watchRedis(name, client)

  const registryOf = fastify.trivium.registry
  fastify.trivium.use(
    callObserver(instruments, (name) => registryOf.has(name)),
    { name: METRICS_MIDDLEWARE_NAME, first: true },
  )
  const unsubscribe = subscribeChannels(instruments)
  fastify.addHook('onClose', async () => unsubscribe())

  const token = options.token === undefined ? undefined : Buffer.from(options.token)
  if (expose) metricsRoute(fastify, registry, path, token)
  let address: AddressInfo | undefined
  if (options.listen) {
    const started = await metricsServer(
      registry,
      path,
      options.listen.host ?? '127.0.0.1',
      options.listen.port,
      token,
    )
    address = started.address
    fastify.addHook('onClose', async () => {
      await new Promise((resolve) => started.server.close(resolve))
    })
  }
  fastify.decorate('metrics', {
    registry,
    instruments,
    watchPool: (pool: PoolLike) => instruments.watchPool(pool),
    watchRedis,
    address: () => address,
  } satisfies TriviumMetrics)
}

export const triviumMetrics = fp(metrics, {
  fastify: '^5.12.1',
  name: '@trivium/metrics',
  dependencies: ['@trivium/core'],
  decorators: { fastify: ['trivium'] },
})
export default triviumMetrics
