// What a frame transport provides to a FrameSession: bytes out with its own framing, its backlog, and
// its own way of closing. Everything else (what the frames mean) is the session's.
import type { Frame } from '@trivium/wire'

/** Why a session ends the connection; each carrier maps it to its own close (a WebSocket code, a FIN). */
export type CloseKind =
  /** `app.close()`, after GOAWAY and the drain. */
  | 'shutdown'
  /** Nothing in flight and nothing received for `idleTimeoutMs`. */
  | 'idle'
  /** The session was closed (`closeSessions`, revocation) or its token expired; an ERROR id 0 precedes it. */
  | 'session'
  /** Queued bytes over `maxPushBacklog` when a push arrived. */
  | 'slow_consumer'
  /** The byte stream cannot be trusted any more (an ERROR id 0 or for the frame precedes it). */
  | 'protocol'
  /** An unexpected server error. */
  | 'internal'

export interface FrameCarrier {
  /** Sends a frame whose body is `body` (RESPONSE, ERROR, STREAM_ITEM, STREAM_END, PONG…). */
  sendBody(type: number, requestId: number, body: Uint8Array | string): void
  /** Sends a frame with a name or topic (PUSH, GOAWAY). */
  sendFrame(frame: Frame): void
  /** Bytes accepted for the peer and not yet handed to the OS. */
  readonly backlog: number
  /** Resolves once the socket drained, the signal aborted or the connection closed. */
  drain(signal: AbortSignal): Promise<void>
  /** Ends the connection; `message` is for the peer where the carrier can say it (a close reason). */
  close(kind: CloseKind, message: string): void
  /** The connection can still send. */
  readonly open: boolean
  /**
   * Largest frame (header + body) the carrier accepts; a compressed frame's inflated size is held to it
   * too (default: @trivium/wire's DEFAULT_MAX_FRAME_BYTES).
   */
  readonly maxFrameBytes?: number
  /** Carrier-specific timers (WebSocket liveness pings, TCP partial-frame timeout); called every tick. */
  tick?(now: number): void
}

/** The parts of a REQUEST payload: TCP carries metadata and a per-frame format in front of the model. */
export interface RequestParts {
  metadata: Record<string, string> | undefined
  /** A format name from the frame (TCP `format` metadata); undefined: the connection's format. */
  formatName: string | undefined
  /**
   * The call's credential when the carrier read it with the metadata (TCP: once per repeated block, as
   * `SessionInit.credential` would read it): null for none. Absent: the session asks `credential`.
   */
  credential?: string | null
  /** The metadata's `timeout_ms` when the carrier read it with the block (null: none). Absent: core reads it. */
  timeout?: string | null
  payload: Uint8Array
}
