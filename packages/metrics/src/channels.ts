// The diagnostics channels transports and auth publish on (brief "Shared interfaces"; @trivium/core
// exports the same names as TRIVIUM_CHANNELS). Named here so this package works with any core version.
export const CHANNELS = Object.freeze({
  connection: 'trivium:connection',
  frameRejected: 'trivium:frame:rejected',
  push: 'trivium:push',
  authRevoked: 'trivium:auth:revoked',
  authFailure: 'trivium:auth:failure',
  busMessage: 'trivium:bus:message',
})

export type Transport = 'http' | 'websocket' | 'tcp'

/** Label values accepted from a channel message; anything else counts as `other` (bounded cardinality). */
export const TRANSPORTS: ReadonlySet<string> = new Set(['http', 'websocket', 'tcp'])
export const REJECT_REASONS: ReadonlySet<string> = new Set([
  'malformed',
  'too_large',
  'unknown_type',
  'in_flight_limit',
  'duplicate_id',
  'shutting_down',
  'bad_metadata',
  'bad_format',
])
export const AUTH_FAILURE_REASONS: ReadonlySet<string> = new Set(['missing', 'expired', 'revoked', 'invalid'])
export const PUSH_EVENTS: ReadonlySet<string> = new Set(['sent', 'dropped'])

export function bounded(value: unknown, allowed: ReadonlySet<string>): string {
  return typeof value === 'string' && allowed.has(value) ? value : 'other'
}

/** Bus channel names become label values: the first 20 seen, then `other` (bounded cardinality). */
export function boundedChannel(seen: Set<string>, value: unknown): string {
  if (typeof value !== 'string') return 'other'
  if (seen.has(value)) return value
  if (seen.size >= 20) return 'other'
  seen.add(value)
  return value
}
