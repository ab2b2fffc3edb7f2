// Names of the `node:diagnostics_channel` channels Trivium publishes on, so that observers (metrics,
// tracing) see transport events without the transports knowing them. Message shapes in PROTOCOL.md
// "Observability".
export const TRIVIUM_CHANNELS = {
  /** `{ transport: 'websocket' | 'tcp', event: 'open' | 'close' }` */
  connection: 'trivium:connection',
  /** `{ transport, reason }`: a frame or request refused before it reached the pipeline. */
  frameRejected: 'trivium:frame:rejected',
  /** `{ transport, event: 'sent' | 'dropped' }` */
  push: 'trivium:push',
  /** `{ count }`: tokens revoked. */
  authRevoked: 'trivium:auth:revoked',
  /** `{ reason: 'missing' | 'expired' | 'revoked' | 'invalid' }` */
  authFailure: 'trivium:auth:failure',
} as const

/** Why a frame transport refused a frame or a request (label of `trivium:frame:rejected`). */
export type FrameRejectReason =
  | 'malformed'
  | 'too_large'
  | 'unknown_type'
  | 'in_flight_limit'
  | 'duplicate_id'
  | 'shutting_down'
  | 'session_closed'
  | 'bad_metadata'
  | 'bad_format'
  /** A CLIENT_ITEM or CLIENT_END breaking the rules of a client stream (unknown id, after half-close, over credit). */
  | 'client_stream'
