// What a connection keeps of its upgrade request: the headers and query its calls' middleware reads
// (`call.headers`, `call.query`, the credential), with strings of their own (bench/density, issue 42).
// The query parser's values are slices of the request's URL (a 512-byte URL stayed whole for a
// `token` value), and most header values are the same on every connection ('websocket', 'Upgrade', '13',
// the Host, a browser's User-Agent): each value is copied into a flat string, or, for a few common names
// (SHARED_HEADERS), replaced by an equal one an earlier connection keeps. The objects stay the request's own (their shapes and prototypes), and every
// value is equal to the one replaced: nothing a middleware reads changes.

/** Longer values are copied, never shared. */
const MAX_SHARED_LENGTH = 256

/**
 * The only names whose previous value is remembered: values every client sends alike, none a secret.
 * Any other value (a credential, a cookie, an application's own `x-api-key`) is copied, never kept in
 * this cache: nothing of one client outlives its connection here.
 */
const SHARED_HEADERS = new Set([
  'host',
  'connection',
  'upgrade',
  'origin',
  'user-agent',
  'accept-encoding',
  'accept-language',
  'cache-control',
  'pragma',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
])
const SHARED_QUERY = new Set(['format'])

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

/** `value`, as the previous connection's equal string when its name is shared, else as a copy. */
function keptValue(last: Map<string, string> | undefined, name: string, value: string): string {
  if (last === undefined) return ownCopy(value)
  const previous = last.get(name)
  if (previous === value) return previous
  const own = ownCopy(value)
  if (own.length <= MAX_SHARED_LENGTH) last.set(name, own)
  return own
}

/** Replaces every string value of `values` (and of its arrays) in place by a kept equal one. */
function keepValues(
  shared: ReadonlySet<string>,
  lastValues: Map<string, string>,
  values: Record<string, unknown>,
): void {
  for (const name of Object.keys(values)) {
    if (name === '__proto__') continue // an own key of that name: assigning it would not set it
    const last = shared.has(name) ? lastValues : undefined
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
  keepValues(SHARED_HEADERS, lastHeaderValues, headers)
  keepValues(SHARED_QUERY, lastQueryValues, query)
}
