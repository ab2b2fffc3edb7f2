// Counters in Redis, shared by every instance. One Lua script per request does the whole fixed-window
// rule atomically (check before increment, as the README says), with Redis's own clock so instances with
// skewed clocks still agree on windows, and PEXPIREAT at the window end so no key lives without expiry.
import { createHash } from 'node:crypto'
import type { RateLimitStore } from './memory-store.js'
import { type RateLimit, type RateLimitResult, retryAfterSeconds } from './window.js'

/** The part of an ioredis client this store uses (ioredis `Redis` and `Cluster` fit). */
export interface RedisClientLike {
  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  /** ioredis connection status; when it says the connection is down, calls fail at once. */
  readonly status?: string
}

export interface RedisStoreOptions {
  /** Key prefix (default `trivium:rl:`); the key is `<prefix><client id>:<endpoint>`. */
  prefix?: string
  /** A call slower than this (ms) counts as Redis being unreachable (default 500). */
  timeoutMs?: number
}

/** Redis could not answer; the limiter then applies its `whenStoreDown` policy. */
export class StoreUnavailableError extends Error {
  readonly code = 'TRV_RATE_LIMIT_STORE_UNAVAILABLE'
  constructor(message: string, options?: { cause?: unknown }) {
    super(`@trivium/protections: rate-limit store unavailable: ${message}`, options)
    this.name = 'StoreUnavailableError'
  }
}

// KEYS[1] counter key; ARGV[1] requests; ARGV[2] window ms.
// Returns { allowed (0|1), count, windowStart ms, now ms }.
export const FIXED_WINDOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local requests = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'c', 's')
local count = tonumber(v[1]) or 0
local start = tonumber(v[2])
if start == nil or now - start >= window then
  count = 0
  start = now
end
if count >= requests then
  return {0, count, start, now}
end
count = count + 1
redis.call('HSET', KEYS[1], 'c', count, 's', start)
redis.call('PEXPIREAT', KEYS[1], start + window)
return {1, count, start, now}
`

const SCRIPT_SHA = createHash('sha1').update(FIXED_WINDOW_LUA).digest('hex')
const DOWN_STATUSES = new Set(['close', 'reconnecting', 'end'])

export class RedisStore implements RateLimitStore {
  private readonly client: RedisClientLike
  private readonly prefix: string
  private readonly timeoutMs: number

  constructor(client: RedisClientLike, options: RedisStoreOptions = {}) {
    if (typeof client?.evalsha !== 'function' || typeof client.eval !== 'function') {
      throw new TypeError('@trivium/protections: redis must be an ioredis client (needs eval and evalsha)')
    }
    const prefix = options.prefix ?? 'trivium:rl:'
    if (typeof prefix !== 'string') throw new TypeError('@trivium/protections: redisPrefix must be a string')
    const timeoutMs = options.timeoutMs ?? 500
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
      throw new TypeError('@trivium/protections: redisTimeoutMs must be a positive integer (milliseconds)')
    }
    this.client = client
    this.prefix = prefix
    this.timeoutMs = timeoutMs
  }

  /**
   * One EVALSHA per call (EVAL once if Redis does not know the script yet). Written with one promise and
   * one timer per call (no Promise.race/catch/finally chain): this runs on every rate-limited request.
   */
  hit(key: string, limit: RateLimit): Promise<RateLimitResult> {
    const status = this.client.status
    if (status !== undefined && DOWN_STATUSES.has(status)) {
      return Promise.reject(new StoreUnavailableError(`connection is ${status}`))
    }
    return new Promise<RateLimitResult>((resolve, reject) => {
      let settled = false
      const timer = setTimeout(() => {
        settled = true
        reject(new StoreUnavailableError(`no reply within ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      const fail = (err: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        reject(
          err instanceof StoreUnavailableError
            ? err
            : new StoreUnavailableError((err as Error)?.message ?? String(err), { cause: err }),
        )
      }
      const done = (reply: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        try {
          resolve(toResult(reply, limit))
        } catch (err) {
          reject(err)
        }
      }
      const redisKey = this.prefix + key
      let call: Promise<unknown>
      try {
        call = this.client.evalsha(SCRIPT_SHA, 1, redisKey, limit.requests, limit.windowMs)
      } catch (err) {
        fail(err)
        return
      }
      call.then(done, (err: unknown) => {
        if (settled) return
        if (!String((err as Error)?.message).startsWith('NOSCRIPT')) return fail(err)
        try {
          this.client.eval(FIXED_WINDOW_LUA, 1, redisKey, limit.requests, limit.windowMs).then(done, fail)
        } catch (e) {
          fail(e)
        }
      })
    })
  }
}

function toResult(reply: unknown, limit: RateLimit): RateLimitResult {
  if (!Array.isArray(reply) || reply.length !== 4) throw new StoreUnavailableError('unexpected script reply')
  const allowed = Number(reply[0])
  const count = Number(reply[1])
  const resetTime = Number(reply[2]) + limit.windowMs
  if (allowed === 1) {
    return {
      isAllowed: true,
      remaining: limit.requests - count,
      resetTime,
      retryAfter: 0,
      limit: limit.requests,
    }
  }
  return {
    isAllowed: false,
    remaining: 0,
    resetTime,
    retryAfter: retryAfterSeconds(resetTime, Number(reply[3])),
    limit: limit.requests,
  }
}
