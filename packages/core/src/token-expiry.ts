// The end of a session at its token's expiry, the same on every transport that keeps one open (frame
// connections, HTTP event streams): PROTOCOL.md "Frames" (session expiry) and "HTTP streaming".

/** The spec's message for an expired token; also what ends a session or stream when its token expires. */
export const TOKEN_EXPIRED_MESSAGE = 'Token has expired'

/** setTimeout's largest delay; a later expiry re-arms the timer when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1
/** Expiries are grouped in slots this long (ms), each ended at the slot's end: never before `expiresAt`. */
const SLOT_MS = 100

/** What ends at an expiry: a session holds its own entry (no entry object or closure of its own). */
export interface Expiring {
  tokenExpired(): void
}

/**
 * Every pending expiry of the process, by slot, with ONE timer for the earliest slot: ten thousand open
 * sessions are ten thousand entries of a few sets, not ten thousand Node timers or closures
 * (bench/density). Tokens expire on whole seconds, so sessions of the same second share a slot.
 */
const slots = new Map<number, Set<Expiring>>()
/** Slot keys in ascending order (a slot emptied by cancels stays until its time: skipped then). */
const order: number[] = []
let timer: NodeJS.Timeout | undefined
let timerSlot = Number.POSITIVE_INFINITY

const slotOf = (expiresAt: number): number => Math.ceil(expiresAt / SLOT_MS) * SLOT_MS

/**
 * Calls `target.tokenExpired()` once the wall clock has reached `expiresAt` (ms since the epoch), at
 * most SLOT_MS later. The timer does not keep the process alive. A target is armed at most once per
 * `expiresAt`; `cancelExpiry(target, expiresAt)` undoes it.
 */
export function expireAt(target: Expiring, expiresAt: number): void {
  const slot = slotOf(expiresAt)
  let set = slots.get(slot)
  if (set === undefined) {
    set = new Set()
    slots.set(slot, set)
    const at = insertionPoint(slot)
    if (order[at] !== slot) order.splice(at, 0, slot)
  }
  set.add(target)
  if (slot < timerSlot) arm(slot)
}

/** Cancels `expireAt(target, expiresAt)` (nothing when it has fired or was never armed). */
export function cancelExpiry(target: Expiring, expiresAt: number): void {
  const slot = slotOf(expiresAt)
  const current = slots.get(slot)
  if (current?.delete(target) && current.size === 0) slots.delete(slot)
}

/**
 * Calls `expired` once the wall clock has reached `expiresAt` (ms since the epoch), at most SLOT_MS
 * later; returns the function that cancels it. The timer does not keep the process alive.
 */
export function atExpiry(expiresAt: number, expired: () => void): () => void {
  const target: Expiring = { tokenExpired: expired }
  expireAt(target, expiresAt)
  return () => cancelExpiry(target, expiresAt)
}

function insertionPoint(slot: number): number {
  let low = 0
  let high = order.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if ((order[mid] as number) < slot) low = mid + 1
    else high = mid
  }
  return low
}

function arm(slot: number): void {
  if (timer !== undefined) clearTimeout(timer)
  timerSlot = slot
  timer = setTimeout(fire, Math.min(Math.max(0, slot - Date.now()), MAX_TIMER_MS))
  timer.unref()
}

function fire(): void {
  timer = undefined
  timerSlot = Number.POSITIVE_INFINITY
  // Timers may fire a little early against the wall clock: only slots whose time has come are ended.
  const now = Date.now()
  let done = 0
  while (done < order.length && (order[done] as number) <= now) done++
  const due = order.splice(0, done)
  for (const slot of due) {
    const set = slots.get(slot)
    slots.delete(slot)
    if (set !== undefined) for (const entry of set) runExpired(entry)
  }
  // The earliest slot still waiting (emptied ones are dropped here rather than woken for).
  while (order.length > 0 && !slots.has(order[0] as number)) order.shift()
  if (order.length > 0) arm(order[0] as number)
}

function runExpired(entry: Expiring): void {
  try {
    entry.tokenExpired()
  } catch {
    // An expiry's own failure must not stop the others of its slot (each caller handles its errors).
  }
}
