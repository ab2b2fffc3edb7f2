// How deep a JSON payload may nest (PROTOCOL.md "Decoding rules"), shared by the server's decoders
// (@trivium/core) and the client's readers (@trivium/client). Every walk over a JSON value from the
// other side is bounded by it, so deep input is a 400, never a stack overflow. The binary format's
// reader has the same limit (models and `any` containers, @trivium/codec's DEFAULT_MAX_DEPTH). Browser-safe.

/** Arrays and objects nested in a JSON payload, the outermost one counted: at most this many. */
export const MAX_JSON_DEPTH = 64

/** The refusal's message (ValidationException, 400), the same on every transport. */
export const JSON_TOO_DEEP_MESSAGE = `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`

/**
 * True when `value` nests arrays and objects deeper than `max` (default MAX_JSON_DEPTH). Its own
 * recursion stops at `max + 1` levels, whatever the value.
 */
export function nestsDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  return tooDeep(value, max)
}

function tooDeep(value: unknown, left: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (left === 0) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (tooDeep(value[i], left - 1)) return true
    return false
  }
  for (const key in value) if (tooDeep((value as Record<string, unknown>)[key], left - 1)) return true
  return false
}
