// Counters in Redis, shared by every instance. One Lua script does the whole fixed-window rule
// atomically (check before increment, as the README says), with Redis's own clock so instances with
// skewed clocks still agree on windows, and PEXPIREAT at the window end so no key lives without expiry.
// The hits of one event-loop turn go to Redis as one script call (issue 19: one round trip and one
// command for many requests); the script takes them in arrival order, so each verdict is exactly the one
// a call of its own would get.
import { createHash } from 'node:crypto'
import { SETUP } from '../setup-errors.js'
import type { RateLimitStore } from './memory-store.js'
import { allowedResult, deniedResult, type RateLimit, type RateLimitResult } from './window.js'

/** The part of an ioredis client this store uses (ioredis `Redis` and `Cluster` fit). */
export interface RedisClientLike {
  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  /** ioredis connection status; when it says the connection is down, calls fail at once. */
  readonly status?: string
  /** ioredis `Cluster`: the keys of one script call must share a slot, so a batch holds one key. */
  readonly isCluster?: boolean
}

export interface RedisStoreOptions {
  /** Key prefix (default `trivium:rl:`); the key is `<prefix><client id>:<endpoint>`. */
  prefix?: string
  /** A call slower than this (ms) counts as Redis being unreachable (default 500). */
  timeoutMs?: number
  /**
   * Most hits sent in one script call (default 64). Hits of one event-loop turn are batched (with an
   * ioredis `Cluster`, per key: one script call touches one slot); 1 sends each hit as its own call.
   */
  maxBatch?: number
}

/** Redis could not answer; the limiter then applies its `whenStoreDown` policy. */
export class StoreUnavailableError extends Error {
  readonly code = 'TRV_RATE_LIMIT_STORE_UNAVAILABLE'
  constructor(message: string, options?: { cause?: unknown }) {
    super(`@trivium/protections: rate-limit store unavailable: ${message}`, options)
    this.name = 'StoreUnavailableError'
  }
}

// KEYS[i] counter key of hit i; ARGV[2i-1] its requests, ARGV[2i] its window ms. Hits run in order, so
// two hits on one key see each other's increment. Returns { now ms, then allowed (0|1), count,
// windowStart ms for each hit }.
export const FIXED_WINDOW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now}
for i = 1, #KEYS do
  local requests = tonumber(ARGV[2 * i - 1])
  local window = tonumber(ARGV[2 * i])
  local v = redis.call('HMGET', KEYS[i], 'c', 's')
  local count = tonumber(v[1]) or 0
  local start = tonumber(v[2])
  if start == nil or now - start >= window then
    count = 0
    start = now
  end
  local allowed = 0
  if count < requests then
    allowed = 1
    count = count + 1
    redis.call('HSET', KEYS[i], 'c', count, 's', start)
    -- HSET keeps a key's expiry: set it once, when the window starts.
    if count == 1 then redis.call('PEXPIREAT', KEYS[i], start + window) end
  end
  out[#out + 1] = allowed
  out[#out + 1] = count
  out[#out + 1] = start
end
return out
`

const SCRIPT_SHA = createHash('sha1').update(FIXED_WINDOW_LUA).digest('hex')
const DOWN_STATUSES = new Set(['close', 'reconnecting', 'end'])
const DEFAULT_MAX_BATCH = 64

/** Keys and ARGV as the script takes them, and who waits for each verdict. */
interface Batch {
  keys: string[]
  args: number[]
  waiting: PendingHit[]
}

/** A hit waiting for its batch's reply. */
interface PendingHit {
  limit: RateLimit
  resolve(result: RateLimitResult): void
  reject(err: unknown): void
}

export class RedisStore implements RateLimitStore {
  private readonly client: RedisClientLike
  private readonly prefix: string
  private readonly timeoutMs: number
  private readonly maxBatch: number
  /** Batches per key on a Cluster (a script call touches one slot), one batch ('') otherwise. */
  private readonly perKey: boolean
  /** The batches being gathered, flushed at the end of this event-loop turn (or when full). */
  private batches = new Map<string, Batch>()
  private scheduled = false

  constructor(client: RedisClientLike, options: RedisStoreOptions = {}) {
    if (typeof client?.evalsha !== 'function' || typeof client.eval !== 'function') {
      throw SETUP.TRV_PROTECTIONS_REDIS('redis must be an ioredis client (needs eval and evalsha)')
    }
    const prefix = options.prefix ?? 'trivium:rl:'
    if (typeof prefix !== 'string') throw SETUP.TRV_PROTECTIONS_REDIS('redisPrefix must be a string')
    const timeoutMs = options.timeoutMs ?? 500
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
      throw SETUP.TRV_PROTECTIONS_REDIS('redisTimeoutMs must be a positive integer (milliseconds)')
    }
    const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH
    if (!Number.isSafeInteger(maxBatch) || maxBatch < 1 || maxBatch > 1000) {
      throw SETUP.TRV_PROTECTIONS_REDIS('redisMaxBatch must be an integer from 1 to 1000')
    }
    this.client = client
    this.prefix = prefix
    this.timeoutMs = timeoutMs
    this.maxBatch = maxBatch
    this.perKey = client.isCluster === true
  }

  /** Queues the hit for this turn's script call (sent at once when the batch is full). */
  hit(key: string, limit: RateLimit): Promise<RateLimitResult> {
    const status = this.client.status
    if (status !== undefined && DOWN_STATUSES.has(status)) {
      return Promise.reject(new StoreUnavailableError(`connection is ${status}`))
    }
    return new Promise<RateLimitResult>((resolve, reject) => {
      const redisKey = this.prefix + key
      const group = this.perKey ? redisKey : ''
      let batch = this.batches.get(group)
      if (batch === undefined) {
        batch = { keys: [], args: [], waiting: [] }
        this.batches.set(group, batch)
      }
      batch.keys.push(redisKey)
      batch.args.push(limit.requests, limit.windowMs)
      batch.waiting.push({ limit, resolve, reject })
      if (batch.waiting.length >= this.maxBatch) {
        this.batches.delete(group)
        this.flush(batch)
      } else if (!this.scheduled) {
        this.scheduled = true
        // setImmediate, not nextTick: the hits of every request read in this poll phase join the batch.
        setImmediate(this.flushScheduled)
      }
    })
  }

  private readonly flushScheduled = (): void => {
    this.scheduled = false
    const batches = this.batches
    this.batches = new Map()
    for (const batch of batches.values()) this.flush(batch)
  }

  /**
   * One EVALSHA for the batch (EVAL once if Redis does not know the script yet), one timer for all of
   * its hits; a failure or a timeout fails every hit of the batch.
   */
  private flush({ keys, args, waiting }: Batch): void {
    let settled = false
    // Timers run before I/O in an event-loop turn: after a turn that blocked past timeoutMs (a loaded
    // process), the reply may already be in the socket. It gets the turn's I/O phase before the batch
    // counts as unanswered, so the process's own lag is never taken for Redis being down.
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (settled) return
        settled = true
        failAll(waiting, new StoreUnavailableError(`no reply within ${this.timeoutMs} ms`))
      })
    }, this.timeoutMs)
    const fail = (err: unknown) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      failAll(
        waiting,
        err instanceof StoreUnavailableError
          ? err
          : new StoreUnavailableError((err as Error)?.message ?? String(err), { cause: err }),
      )
    }
    const done = (reply: unknown) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (!Array.isArray(reply) || reply.length !== 1 + 3 * waiting.length) {
        failAll(waiting, new StoreUnavailableError('unexpected script reply'))
        return
      }
      const now = Number(reply[0])
      let offset = 1
      for (const hit of waiting) {
        hit.resolve(toResult(reply, offset, now, hit.limit))
        offset += 3
      }
    }
    let call: Promise<unknown>
    try {
      call = this.client.evalsha(SCRIPT_SHA, keys.length, ...keys, ...args)
    } catch (err) {
      fail(err)
      return
    }
    call.then(done, (err: unknown) => {
      if (settled) return
      if (!String((err as Error)?.message).startsWith('NOSCRIPT')) return fail(err)
      try {
        this.client.eval(FIXED_WINDOW_LUA, keys.length, ...keys, ...args).then(done, fail)
      } catch (e) {
        fail(e)
      }
    })
  }
}

function failAll(waiting: PendingHit[], err: unknown): void {
  for (const hit of waiting) hit.reject(err)
}

/** The verdict of the hit whose three values start at `at` in the script's reply. */
function toResult(reply: unknown[], at: number, now: number, limit: RateLimit): RateLimitResult {
  const resetTime = Number(reply[at + 2]) + limit.windowMs
  return Number(reply[at]) === 1
    ? allowedResult(limit, Number(reply[at + 1]), resetTime)
    : deniedResult(limit, resetTime, now)
}
