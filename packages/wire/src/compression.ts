// Compressed frames (PROTOCOL.md "Compression"), the rules both sides share: the default threshold, when a
// body goes out compressed, and how a compressed frame is read within the frame limit. The codec is the
// caller's (zlib on Node, a given one in the browser): this module stays browser-safe.
import { FRAME_COMPRESSED, type Frame, type Inflate, inflateFrame } from './frame.js'

/**
 * Default smallest body sent compressed, in bytes (frames, and HTTP bodies): below about 1 KiB deflate saves
 * little and costs a call.
 */
export const DEFAULT_COMPRESSION_THRESHOLD = 1024

/** Frame header bytes before the body (type and request id). */
const HEADER_BYTES = 5

/**
 * A body to send as type byte and body: raw DEFLATE with the 0x80 flag when it is at least `threshold`
 * bytes and compressing makes it smaller, else as it is.
 */
export function compressBody(
  type: number,
  body: Uint8Array,
  threshold: number,
  deflate: (body: Uint8Array) => Uint8Array,
): [number, Uint8Array] {
  if (body.length >= threshold) {
    const packed = deflate(body)
    if (packed.length < body.length) return [type | FRAME_COMPRESSED, packed]
  }
  return [type, body]
}

/** A received compressed frame as the plain frame it stands for, inflated within `maxFrameBytes`. Throws FrameError. */
export function inflateReceived(frame: Frame, inflate: Inflate, maxFrameBytes: number): Frame {
  return inflateFrame(frame, inflate, maxFrameBytes - HEADER_BYTES, maxFrameBytes)
}
