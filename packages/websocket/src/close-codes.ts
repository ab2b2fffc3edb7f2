/** WebSocket close codes used by @trivium/websocket (PROTOCOL.md "WebSocket"). */
export const CloseCode = {
  /** Server shutting down (after a GOAWAY frame). */
  GOING_AWAY: 1001,
  /** A frame shorter than its 5-byte header. */
  PROTOCOL_ERROR: 1002,
  /** A text message: only binary frames are accepted. */
  UNSUPPORTED_DATA: 1003,
  /** A message over maxPayload (sent by ws itself). */
  MESSAGE_TOO_BIG: 1009,
  /** Unexpected server error. */
  INTERNAL_ERROR: 1011,
  /** Nothing in flight and no frame received for idleTimeoutMs. */
  IDLE_TIMEOUT: 4000,
  /** The connection's token was revoked or expired (closeSessions, or the token's exp passed). */
  SESSION_REVOKED: 4001,
  /** The client reads too slowly: queued push bytes over maxPushBacklog. */
  SLOW_CONSUMER: 4002,
} as const
