// The fixed-window rule (README "Rate limiting"; PROTOCOL.md "Limits"), as one pure function shared by the memory store and mirrored line by line in the Redis
// Lua script:
//   now - windowStart >= window → new window (count 0, windowStart = now), then evaluate;
//   count >= requests          → denied, remaining 0, retryAfter = whole seconds to windowStart + window;
//   otherwise                  → count + 1, remaining = requests - count.
import { SETUP } from '../setup-errors.js'

/** The documented RateLimit record: `requests` per `windowMs` milliseconds. */
export interface RateLimit {
  requests: number
  windowMs: number
}

/** The documented RateLimitResult record, plus the limit it was checked against. */
export interface RateLimitResult {
  isAllowed: boolean
  /** Requests left in this window (0 when denied). */
  remaining: number
  /** Window end (windowStart + window), milliseconds since the Unix epoch. */
  resetTime: number
  /** Whole seconds until the window ends, rounded up; 0 when allowed. */
  retryAfter: number
  /** `requests` of the limit applied. */
  limit: number
}

/** One counter: the state of a (client, endpoint) window. */
export interface WindowState {
  count: number
  windowStart: number
  windowMs: number
}

export const DEFAULT_LIMIT: Readonly<RateLimit> = Object.freeze({ requests: 100, windowMs: 60_000 })

/** Applies one request to `state` (mutated in place) and returns the verdict. */
export function evaluateWindow(state: WindowState, limit: RateLimit, now: number): RateLimitResult {
  if (now - state.windowStart >= limit.windowMs) {
    state.count = 0
    state.windowStart = now
  }
  state.windowMs = limit.windowMs
  const resetTime = state.windowStart + limit.windowMs
  if (state.count >= limit.requests) return deniedResult(limit, resetTime, now)
  state.count += 1
  return allowedResult(limit, state.count, resetTime)
}

/** The verdict for an allowed request that made the window's count `count`. */
export function allowedResult(limit: RateLimit, count: number, resetTime: number): RateLimitResult {
  return {
    isAllowed: true,
    remaining: limit.requests - count,
    resetTime,
    retryAfter: 0,
    limit: limit.requests,
  }
}

/** The verdict for a refused request (the count is not increased). */
export function deniedResult(limit: RateLimit, resetTime: number, now: number): RateLimitResult {
  return {
    isAllowed: false,
    remaining: 0,
    resetTime,
    retryAfter: retryAfterSeconds(resetTime, now),
    limit: limit.requests,
  }
}

/**
 * "whole seconds from now to windowStart + window". Rounded up, so a client told to wait n seconds is
 * never refused again for the same window; a denial always happens before the window ends, so n >= 1.
 */
export function retryAfterSeconds(resetTime: number, now: number): number {
  return Math.max(1, Math.ceil((resetTime - now) / 1000))
}

function isPositiveInteger(value: unknown): value is number {
  return Number.isSafeInteger(value) && Number(value) >= 1
}

/** Throws a TypeError naming `where` unless `limit` is a valid RateLimit. */
export function assertRateLimit(limit: unknown, where: string): asserts limit is RateLimit {
  if (typeof limit !== 'object' || limit === null) {
    throw SETUP.TRV_PROTECTIONS_RATE_LIMIT(where, ' must be { requests, windowMs } or false')
  }
  if (!('requests' in limit) || !isPositiveInteger(limit.requests)) {
    throw SETUP.TRV_PROTECTIONS_RATE_LIMIT(where, '.requests must be a positive integer')
  }
  if (!('windowMs' in limit) || !isPositiveInteger(limit.windowMs)) {
    throw SETUP.TRV_PROTECTIONS_RATE_LIMIT(where, '.windowMs must be a positive integer (milliseconds)')
  }
}
