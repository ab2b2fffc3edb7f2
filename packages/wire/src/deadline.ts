// Per-call deadlines (PROTOCOL.md "Deadlines"): where the client's timeout travels and the one rule that
// reads it, shared by the server (@trivium/core) and @trivium/client. Browser-safe.

/** HTTP request header carrying a call's timeout in ms (Connect's `Connect-Timeout-Ms` form). */
export const TIMEOUT_HEADER = 'Trivium-Timeout-Ms'
/** REQUEST metadata key carrying a call's timeout in ms (TCP; WebSocket with `metadata=1`). */
export const TIMEOUT_METADATA_KEY = 'timeout_ms'
/** The longest timeout: the largest delay a timer takes (2^31 - 1 ms, ~24.8 days). */
export const MAX_TIMEOUT_MS = 2_147_483_647

const DIGITS = /^[0-9]{1,10}$/

/**
 * A timeout as sent (1 to 10 decimal digits, value 1 … MAX_TIMEOUT_MS), or undefined when the text is
 * anything else (`0`, `-1`, `1.5`, `1e3`, ` 5`, `9007199254740992`, two values joined by a comma).
 */
export function parseTimeoutMs(text: string): number | undefined {
  if (!DIGITS.test(text)) return undefined
  const ms = Number(text)
  return ms >= 1 && ms <= MAX_TIMEOUT_MS ? ms : undefined
}

/** The refusal's message, naming where the value came from (one text per place, every transport). */
export function invalidTimeoutMessage(where: 'header' | 'metadata'): string {
  const name = where === 'header' ? `${TIMEOUT_HEADER} header` : `${TIMEOUT_METADATA_KEY} metadata`
  return `Invalid ${name}: must be a positive integer number of milliseconds, at most ${MAX_TIMEOUT_MS}`
}

/** The deadline error's message (TimeoutException, TRV_TIMEOUT, 504), the same on every transport. */
export function deadlineExceededMessage(ms: number): string {
  return `Deadline of ${ms} ms exceeded`
}
