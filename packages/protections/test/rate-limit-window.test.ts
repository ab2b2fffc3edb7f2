// The spec's fixed-window rule on the memory store, with a controlled clock, and the periodic sweep.

import { evaluateWindow, MemoryStore, type RateLimit } from '@trivium/protections'
import { retryAfterSeconds } from '@trivium/protections/internal'
import t from 'tap'

const limit: RateLimit = { requests: 3, windowMs: 10_000 }

t.test('count < requests → allowed, count + 1, remaining = requests - count', async (t) => {
  let now = 1_000_000
  const store = new MemoryStore({ sweepIntervalMs: 0, clock: () => now })
  t.same(store.hit('k', limit), {
    isAllowed: true,
    remaining: 2,
    resetTime: 1_010_000,
    retryAfter: 0,
    limit: 3,
  })
  now += 1
  t.same(store.hit('k', limit), {
    isAllowed: true,
    remaining: 1,
    resetTime: 1_010_000,
    retryAfter: 0,
    limit: 3,
  })
  t.same(store.hit('k', limit), {
    isAllowed: true,
    remaining: 0,
    resetTime: 1_010_000,
    retryAfter: 0,
    limit: 3,
  })
  store.close()
})

t.test(
  'count >= requests → denied, remaining 0, retryAfter = whole seconds to windowStart + window',
  async (t) => {
    let now = 1_000_000
    const store = new MemoryStore({ sweepIntervalMs: 0, clock: () => now })
    for (let i = 0; i < 3; i++) store.hit('k', limit)
    now = 1_000_500 // 9.5 s left → 10
    t.same(store.hit('k', limit), {
      isAllowed: false,
      remaining: 0,
      resetTime: 1_010_000,
      retryAfter: 10,
      limit: 3,
    })
    now = 1_009_999 // 1 ms left → 1
    t.same(store.hit('k', limit), {
      isAllowed: false,
      remaining: 0,
      resetTime: 1_010_000,
      retryAfter: 1,
      limit: 3,
    })
    // Denied requests are not counted: the next window starts fresh.
    now = 1_010_000 // now - windowStart >= window exactly → new window
    t.same(store.hit('k', limit), {
      isAllowed: true,
      remaining: 2,
      resetTime: 1_020_000,
      retryAfter: 0,
      limit: 3,
    })
    store.close()
  },
)

t.test('keys are independent', async (t) => {
  const now = 5_000
  const store = new MemoryStore({ sweepIntervalMs: 0, clock: () => now })
  for (let i = 0; i < 3; i++) store.hit('ip:1.2.3.4:a', limit)
  t.equal(store.hit('ip:1.2.3.4:a', limit).isAllowed, false)
  t.equal(store.hit('ip:1.2.3.4:b', limit).isAllowed, true)
  t.equal(store.hit('ip:5.6.7.8:a', limit).isAllowed, true)
  store.close()
})

t.test('evaluateWindow and retryAfterSeconds', async (t) => {
  const state = { count: 0, windowStart: 0, windowMs: 1000 }
  t.same(evaluateWindow(state, { requests: 1, windowMs: 1000 }, 0).isAllowed, true)
  t.same(evaluateWindow(state, { requests: 1, windowMs: 1000 }, 999), {
    isAllowed: false,
    remaining: 0,
    resetTime: 1000,
    retryAfter: 1,
    limit: 1,
  })
  t.equal(retryAfterSeconds(61_000, 1_000), 60)
  t.equal(retryAfterSeconds(61_000, 1_001), 60)
  t.equal(retryAfterSeconds(61_000, 999), 61)
})

t.test('sweep drops counters whose window has passed (now - windowStart > window), 100k keys', async (t) => {
  let now = 0
  const store = new MemoryStore({ sweepIntervalMs: 0, clock: () => now })
  for (let i = 0; i < 100_000; i++)
    store.hit(`ip:10.0.${i >> 8}.${i & 255}:x${i}`, { requests: 5, windowMs: 1000 })
  store.hit('long', { requests: 5, windowMs: 60_000 })
  t.equal(store.size, 100_001)
  t.equal(store.sweep(1000), 0, 'now - windowStart == window is not yet stale')
  t.equal(store.sweep(1001), 100_000)
  t.equal(store.size, 1, 'the counter with a longer window stays')
  now = 61_001
  t.equal(store.sweep(), 1)
  t.equal(store.size, 0)
  store.close()
})

t.test('the sweep timer runs on its own, is unref-ed and stops on close', async (t) => {
  const store = new MemoryStore({ sweepIntervalMs: 30 })
  for (let i = 0; i < 100_000; i++) store.hit(`k${i}`, { requests: 1, windowMs: 5 })
  t.equal(store.size, 100_000)
  const timer = (store as unknown as { timer: NodeJS.Timeout }).timer
  t.equal(timer.hasRef(), false, 'does not keep the process alive')
  // Polls (up to 5 s on a loaded machine) instead of assuming when the timer fires.
  for (let i = 0; i < 100 && store.size > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(store.size, 0, 'swept without being asked')
  store.close()
  t.equal((store as unknown as { timer: unknown }).timer, undefined)
})

t.test('bad options', async (t) => {
  t.throws(() => new MemoryStore({ sweepIntervalMs: -1 }), {
    message: '@trivium/protections: sweepIntervalMs must be a non-negative integer (milliseconds)',
  })
})
