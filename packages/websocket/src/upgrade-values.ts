// What a connection keeps of its upgrade request: the headers and query its calls' middleware reads
// (`call.headers`, `call.query`, the credential), with strings of their own (bench/density, issue 42).
// The query parser's values are slices of the request's URL (a 512-byte URL stayed whole for a
// `token` value), and most header values are the same on every connection ('websocket', 'Upgrade', '13',
// the Host, a browser's User-Agent): each value is copied into a flat string, or replaced by an equal one
// an earlier connection keeps. The objects stay the request's own (their shapes and prototypes), and every
// value is equal to the one replaced: nothing a middleware reads changes.

/** Names whose previous value is remembered (one per name, header and query apart). */
const MAX_NAMES = 64
/** Longer values are copied, never shared (a token, a cookie: one per client). */
const MAX_SHARED_LENGTH = 256

/**
 * Names whose values are copied, never remembered: credentials (no token outlives its connections in
 * this cache) and values unique to each connection.
 */
const NEVER_SHARED = new Set(['authorization', 'proxy-authorization', 'cookie', 'token', 'sec-websocket-key'])

const lastHeaderValues = new Map<string, string>()
const lastQueryValues = new Map<string, string>()

/**
 * A string equal to `value` that shares no storage with the request's text: `JSON.stringify` makes a new
 * string of the value (quoted, escaped), `JSON.parse` a new flat one of it, exactly equal (lone
 * surrogates included: they are escaped, then read back).
 */
function ownCopy(value: string): string {
  return JSON.parse(JSON.stringify(value)) as string
}

/** `value`, as the previous connection's equal string, else as a copy (remembered when short). */
function keptValue(last: Map<string, string>, name: string, value: string): string {
  if (NEVER_SHARED.has(name)) return ownCopy(value)
  const previous = last.get(name)
  if (previous === value) return previous
  const own = ownCopy(value)
  if (own.length <= MAX_SHARED_LENGTH && (previous !== undefined || last.size < MAX_NAMES)) {
    last.set(name, own)
  }
  return own
}

/** Replaces every string value of `values` (and of its arrays) in place by a kept equal one. */
function keepValues(last: Map<string, string>, values: Record<string, unknown>): void {
  for (const name of Object.keys(values)) {
    if (name === '__proto__') continue // an own key of that name: assigning it would not set it
    const value = values[name]
    if (typeof value === 'string') {
      values[name] = keptValue(last, name, value)
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i]
        if (typeof item === 'string') value[i] = keptValue(last, name, item)
      }
    }
  }
}

/**
 * Gives the upgrade's headers and query values that keep nothing of the request alive (see above), for
 * the connection that keeps the two objects.
 */
export function keepUpgradeValues(headers: Record<string, unknown>, query: Record<string, unknown>): void {
  keepValues(lastHeaderValues, headers)
  keepValues(lastQueryValues, query)
}
