/** Codes of {@link FrameError}. */
export const FrameErrorCode = {
  /** The frame (or its declared length) is over `maxFrameBytes`. */
  TOO_LARGE: 'TRV_FRAME_TOO_LARGE',
  /** Truncated header, bad length, missing 0x00 terminator, invalid UTF-8, bad metadata, … */
  MALFORMED: 'TRV_FRAME_MALFORMED',
  /** The type byte is not one of `FrameType`. */
  UNKNOWN_TYPE: 'TRV_FRAME_UNKNOWN_TYPE',
} as const
export type FrameErrorCodeValue = (typeof FrameErrorCode)[keyof typeof FrameErrorCode]

/** The message of a frame that cannot be read (PROTOCOL.md: TCP's ERROR frame, WebSocket's close 1002 reason). */
export const MALFORMED_FRAME_MESSAGE = 'Malformed frame'

/**
 * A frame that cannot be encoded or decoded. `requestId` is set when the header was readable, so a
 * server can answer with an ERROR frame for that id.
 */
export class FrameError extends Error {
  readonly code: string
  readonly requestId: number | undefined
  constructor(code: FrameErrorCodeValue, message: string, requestId?: number) {
    super(message)
    this.name = 'FrameError'
    this.code = code
    this.requestId = requestId
  }
}
