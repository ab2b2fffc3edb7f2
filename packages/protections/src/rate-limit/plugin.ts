// Rate limiting as a core middleware, so an HTTP request, a WebSocket message and a TCP frame all count
// against the same (client, endpoint) key. HTTP responses of counted calls (allowed or 429) get the X-RateLimit-* headers.

import {
  type CallTarget,
  directMiddleware,
  type Middleware,
  RateLimitExceededException,
  type TriviumCall,
} from '@trivium/core'
import {
  checkEndpointNames,
  enforcesSettings,
  optionNames,
  refuseUnknownOptions,
} from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { SETUP } from '../setup-errors.js'
import { RateLimiter, type WhenStoreDown } from './limiter.js'
import { DEFAULT_SWEEP_INTERVAL_MS, MemoryStore, type RateLimitStore } from './memory-store.js'
import { type RedisClientLike, RedisStore, type RedisStoreOptions } from './redis-store.js'
import { assertRateLimit, DEFAULT_LIMIT, type RateLimit, type RateLimitResult } from './window.js'

declare module '@trivium/core' {
  interface TriviumEndpointConfig {
    /** This endpoint's limit (the plugin's `limits` map wins over it); `false` = not limited. */
    rateLimit?: RateLimit | false
  }
}

export interface RateLimitPluginOptions {
  /** Limit for endpoints with no entry of their own (default 100 requests per 60 000 ms). */
  defaultLimit?: RateLimit
  /** Endpoint name → limit, or `false` for no limit. Wins over the endpoint's own `rateLimit`. */
  limits?: Record<string, RateLimit | false>
  /** Register as middleware `rate-limit` with `after: ['auth']` (default true), so authenticated
   *  clients are counted as `user:<id>`. Set false in an app without `auth`. */
  afterAuth?: boolean
  /** An ioredis client (`Redis`, Sentinel-configured `Redis` or `Cluster`): counters live in Redis, shared by every instance. */
  redis?: RedisClientLike
  /** Redis key prefix (default `trivium:rl:`). */
  redisPrefix?: string
  /** A Redis call slower than this counts as Redis down (default 500 ms). */
  redisTimeoutMs?: number
  /** Most rate-limit hits sent to Redis in one script call (default 64; per key on an ioredis Cluster). */
  redisMaxBatch?: number
  /** Policy while the store fails (default `memory`, see README). */
  whenStoreDown?: WhenStoreDown
  /** Sweep period of the memory store, in ms (default 300 000 = 5 minutes). */
  sweepIntervalMs?: number
  /** Any other store (wins over `redis`). */
  store?: RateLimitStore
}

export interface TriviumRateLimit {
  /** Counts one request for `key` (e.g. `user:7:tasks.create`) against `limit`. */
  check(key: string, limit: RateLimit): Promise<RateLimitResult>
  /** The documented client identifier for a call: `user:<user_id>`, `ip:<client_ip>` or `ip:unknown`. */
  clientId(call: TriviumCall<unknown, CallTarget>): string
  /** The limit applied to an endpoint (or a protected plain route), or false when it is not limited. */
  limitFor(endpoint: string, definition?: CallTarget): RateLimit | false
  readonly limiter: RateLimiter
}

declare module 'fastify' {
  interface FastifyInstance {
    triviumRateLimit: TriviumRateLimit
  }
}

export const RATE_LIMIT_MIDDLEWARE_NAME = 'rate-limit'

export function clientId(call: TriviumCall<unknown, CallTarget>): string {
  const identity = call.identity
  if (identity !== undefined) return `user:${String(identity.userId)}`
  return call.clientIp ? `ip:${call.clientIp}` : 'ip:unknown'
}

/** Entries of each per-endpoint key cache before it is emptied (a flood of clients cannot grow it). */
export const KEY_CACHE_LIMIT = 10_000

/** One endpoint's cached keys: by user id, and by client IP for anonymous calls. */
export interface EndpointKeys {
  readonly users: Map<unknown, string>
  readonly ips: Map<unknown, string>
}

/** The key of `call` (whose endpoint `caches` belong to), from the cache or built and cached. */
function keyIn(caches: EndpointKeys, call: TriviumCall<unknown, CallTarget>): string {
  const identity = call.identity
  const cache = identity !== undefined ? caches.users : caches.ips
  const client = identity !== undefined ? identity.userId : call.clientIp
  let key = cache.get(client)
  if (key === undefined) {
    key = `${clientId(call)}:${call.endpoint}`
    if (cache.size >= KEY_CACHE_LIMIT) cache.clear()
    cache.set(client, key)
  }
  return key
}

/**
 * The store key `<clientId>:<endpoint>` of a call, reused across requests: the string is built once per
 * (client, endpoint) instead of per request, and a reused string's hash is already known, so the
 * store's Map lookup does not flatten and hash a fresh concatenation every time. Looked up by user id
 * (a number or a string) or client IP, per endpoint; each cache is emptied when it reaches
 * KEY_CACHE_LIMIT entries. Same keys as `${clientId(call)}:${call.endpoint}`.
 */
export class KeyCache {
  private readonly endpoints = new Map<string, EndpointKeys>()

  keyOf(call: TriviumCall<unknown, CallTarget>): string {
    return keyIn(this.forEndpoint(call.endpoint), call)
  }

  /** The caches of one endpoint (the middleware keeps them with the endpoint's limit). */
  forEndpoint(endpoint: string): EndpointKeys {
    let caches = this.endpoints.get(endpoint)
    if (caches === undefined) {
      caches = { users: new Map(), ips: new Map() }
      this.endpoints.set(endpoint, caches)
    }
    return caches
  }

  /** Keys cached, over every endpoint. */
  get size(): number {
    let size = 0
    for (const caches of this.endpoints.values()) size += caches.users.size + caches.ips.size
    return size
  }
}

/** Every option name of rateLimit: any other is refused with the nearest one named. */
export const RATE_LIMIT_OPTIONS = optionNames<RateLimitPluginOptions>()(
  'defaultLimit',
  'limits',
  'afterAuth',
  'redis',
  'redisPrefix',
  'redisTimeoutMs',
  'redisMaxBatch',
  'whenStoreDown',
  'sweepIntervalMs',
  'store',
)

function validate(options: RateLimitPluginOptions) {
  if (typeof options !== 'object' || options === null) {
    throw SETUP.TRV_PROTECTIONS_OPTIONS('rate-limit options')
  }
  refuseUnknownOptions('@trivium/protections', options, RATE_LIMIT_OPTIONS)
  const defaultLimit = options.defaultLimit ?? DEFAULT_LIMIT
  assertRateLimit(defaultLimit, 'defaultLimit')
  const limits = new Map<string, RateLimit | false>()
  for (const [name, limit] of Object.entries(options.limits ?? {})) {
    if (limit !== false) assertRateLimit(limit, `limits["${name}"]`)
    limits.set(name, limit === false ? false : { requests: limit.requests, windowMs: limit.windowMs })
  }
  const afterAuth = options.afterAuth ?? true
  if (typeof afterAuth !== 'boolean') throw SETUP.TRV_PROTECTIONS_AFTER_AUTH()
  const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS
  return { defaultLimit: { ...defaultLimit }, limits, afterAuth, sweepIntervalMs }
}

/** The store the options choose: the one given, Redis when a client is given, else in memory. */
function storeOf(options: RateLimitPluginOptions, sweepIntervalMs: number): RateLimitStore {
  if (options.store !== undefined) {
    if (typeof options.store?.hit !== 'function') throw SETUP.TRV_PROTECTIONS_STORE()
    return options.store
  }
  if (options.redis !== undefined) {
    const redisOptions: RedisStoreOptions = {}
    if (options.redisPrefix !== undefined) redisOptions.prefix = options.redisPrefix
    if (options.redisTimeoutMs !== undefined) redisOptions.timeoutMs = options.redisTimeoutMs
    if (options.redisMaxBatch !== undefined) redisOptions.maxBatch = options.redisMaxBatch
    return new RedisStore(options.redis, redisOptions)
  }
  return new MemoryStore({ sweepIntervalMs })
}

/** The X-RateLimit-* headers of an HTTP call's response (lower-case names: Fastify stores them so anyway). */
function setRateLimitHeaders(
  call: TriviumCall<unknown, CallTarget>,
  limit: string,
  remaining: string,
  reset: string,
): void {
  if (call.responseHeaders === undefined) {
    // The usual case (no earlier middleware set a header): one object literal, made with its final shape
    // in one allocation, instead of three `setHeader` calls growing an empty object key by key
    // (bench/README.md "bench/js-path"). Same names, values and order.
    call.responseHeaders = {
      'x-ratelimit-limit': limit,
      'x-ratelimit-remaining': remaining,
      'x-ratelimit-reset': reset,
    }
    return
  }
  call.setHeader('x-ratelimit-limit', limit)
  call.setHeader('x-ratelimit-remaining', remaining)
  call.setHeader('x-ratelimit-reset', reset)
}

/** The middleware: each call's verdict from `limiter` under its endpoint's limit, with the X-RateLimit-* headers. */
function rateLimitMiddleware(
  limiter: RateLimiter,
  limitFor: (endpoint: string, definition?: CallTarget) => RateLimit | false,
): Middleware {
  // Per endpoint, resolved on its first call: the limit, its `requests` as header text, and the key
  // cache; one Map lookup per request finds all three.
  interface EndpointState {
    limit: RateLimit | false
    limitText: string
    keys: EndpointKeys
  }
  const states = new Map<string, EndpointState>()
  const keys = new KeyCache()
  function stateOf(call: TriviumCall<unknown, CallTarget>): EndpointState {
    let state = states.get(call.endpoint)
    if (state === undefined) {
      const limit = limitFor(call.endpoint, call.definition)
      state = {
        limit,
        limitText: limit === false ? '' : String(limit.requests),
        keys: keys.forEndpoint(call.endpoint),
      }
      states.set(call.endpoint, state)
    }
    return state
  }
  // The reset time is the same for every request of a window: its text is reused while it lasts.
  let lastReset = -1
  let lastResetText = ''

  function apply(
    call: TriviumCall<unknown, CallTarget>,
    limit: RateLimit,
    limitText: string,
    result: RateLimitResult,
    next: () => Promise<unknown>,
  ) {
    if (call.protocol === 'http') {
      if (result.resetTime !== lastReset) {
        lastReset = result.resetTime
        lastResetText = String(result.resetTime)
      }
      const limitValue = result.limit === limit.requests ? limitText : String(result.limit)
      setRateLimitHeaders(call, limitValue, String(result.remaining), lastResetText)
    }
    // Headers on a denial too: the 429's X-RateLimit-* describe this limiter, over any set earlier by
    // another one (@fastify/rate-limit's onRequest hook).
    if (!result.isAllowed) throw new RateLimitExceededException(result.retryAfter)
    return next()
  }

  // Not an async function: with the memory store the verdict is synchronous, and the call goes on
  // without an extra promise and microtask per request. Errors still come back as a rejected promise.
  return enforcesSettings(
    ['rateLimit'],
    directMiddleware((call, next) => {
      try {
        const state = stateOf(call)
        const limit = state.limit
        if (limit === false) return next()
        const outcome = limiter.check(keyIn(state.keys, call), limit)
        const text = state.limitText
        if (outcome instanceof Promise)
          return outcome.then((result) => apply(call, limit, text, result, next))
        return apply(call, limit, text, outcome, next)
      } catch (err) {
        return Promise.reject(err)
      }
    }),
  )
}

const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = async (
  fastify: FastifyInstance,
  options,
) => {
  const { defaultLimit, limits, afterAuth, sweepIntervalMs } = validate(options)
  const limiter = new RateLimiter({
    store: storeOf(options, sweepIntervalMs),
    whenStoreDown: options.whenStoreDown ?? 'memory',
    log: fastify.log,
    sweepIntervalMs,
  })

  // Resolved once per endpoint (the registry is sealed at ready, so the cache cannot go stale).
  const resolved = new Map<string, RateLimit | false>()
  function limitFor(endpoint: string, definition?: CallTarget): RateLimit | false {
    let limit = resolved.get(endpoint)
    if (limit !== undefined) return limit
    limit = limits.get(endpoint)
    if (limit === undefined) {
      // A plain route protected with `config.triviumRoute` is not in the registry: its call carries it.
      const declared = (definition ?? fastify.trivium.registry.get(endpoint))?.config.rateLimit
      if (declared === false) limit = false
      else if (declared !== undefined) {
        assertRateLimit(declared, `endpoint "${endpoint}" rateLimit`)
        limit = { requests: declared.requests, windowMs: declared.windowMs }
      } else limit = defaultLimit
    }
    resolved.set(endpoint, limit)
    return limit
  }

  const middleware = rateLimitMiddleware(limiter, limitFor)

  fastify.trivium.use(
    middleware,
    afterAuth ? { name: RATE_LIMIT_MIDDLEWARE_NAME, after: ['auth'] } : { name: RATE_LIMIT_MIDDLEWARE_NAME },
  )

  fastify.decorate('triviumRateLimit', {
    check: async (key: string, limit: RateLimit) => {
      assertRateLimit(limit, 'limit')
      return limiter.check(key, limit)
    },
    clientId,
    limitFor,
    limiter,
  } satisfies TriviumRateLimit)

  fastify.addHook('onReady', async () => {
    // A typo in `limits` would silently leave the real endpoint at the default limit.
    checkEndpointNames(fastify.trivium.registry, '@trivium/protections', 'rate-limit limits', limits.keys())
    // Validate every endpoint's declared limit at start-up rather than on its first call.
    for (const definition of fastify.trivium.registry.list()) limitFor(definition.name)
  })
  fastify.addHook('onClose', async () => {
    await limiter.close()
  })
}

/** Rate limiting on every transport. Needs @trivium/core (and, unless `afterAuth: false`, `auth`). */
export const rateLimit = fp(rateLimitPlugin, {
  fastify: '^5.12.1',
  name: '@trivium/protections/rate-limit',
  dependencies: ['@trivium/core'],
})
