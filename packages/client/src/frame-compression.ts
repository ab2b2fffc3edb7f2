// Compressed frames on the client side (PROTOCOL.md "Compression"): the offer (PING 0x88), the server's
// acceptance (PONG 0x89), then bodies of at least `threshold` bytes sent as raw DEFLATE with the 0x80
// flag, and compressed frames from the server inflated within the frame limit. Browser-safe: the codec
// (deflate/inflate) is given; the Node entry has one (`zlibFrameCodec`).
import {
  compressBody,
  DEFAULT_COMPRESSION_THRESHOLD,
  FRAME_COMPRESSED,
  type Frame,
  FrameType,
  frameBody,
  inflateReceived,
} from '@trivium/wire'
import { optionError } from './base.js'

/** Raw DEFLATE (RFC 1951), synchronous: frames stay in order. */
export interface FrameCodec {
  deflate(body: Uint8Array): Uint8Array
  /** Inflates at most `maxBytes` bytes; throws past them (zlib's `maxOutputLength` does). */
  inflate(body: Uint8Array, maxBytes: number): Uint8Array
}

/** Frame compression options: `true`/`false`, or a codec and a threshold. */
export interface FrameCompressionOptions {
  codec: FrameCodec
  /** Smallest body sent compressed, in bytes (default 1024). */
  threshold?: number
}

const EMPTY = new Uint8Array(0)

/** One connection's compression state. */
export class FrameCompression {
  /** The server accepted the offer: bodies over the threshold may go compressed. */
  accepted = false
  readonly #codec: FrameCodec
  readonly #deflate: (body: Uint8Array) => Uint8Array
  readonly #threshold: number
  readonly #maxFrameBytes: number

  constructor(options: FrameCompressionOptions, maxFrameBytes: number) {
    this.#codec = options.codec
    this.#deflate = (body) => options.codec.deflate(body)
    this.#threshold = options.threshold ?? DEFAULT_COMPRESSION_THRESHOLD
    this.#maxFrameBytes = maxFrameBytes
  }

  /** Checks the options once, at construction of the client. */
  static check(name: string, options: FrameCompressionOptions | undefined): void {
    if (options === undefined) return
    const { codec, threshold } = options
    if (typeof codec?.deflate !== 'function' || typeof codec?.inflate !== 'function')
      throw optionError(`${name} needs a codec with deflate and inflate functions`)
    if (threshold !== undefined && (!Number.isInteger(threshold) || threshold < 0))
      throw optionError(`${name}.threshold must be an integer of at least 0 (bytes)`)
  }

  /** The offer, the connection's first frame: type, request id 0, empty body. */
  readonly offer: [number, number, Uint8Array] = [FrameType.PING | FRAME_COMPRESSED, 0, EMPTY]

  /** A frame to send as type byte and body: compressed once accepted, over the threshold, when smaller. */
  outgoing(frame: Frame): [number, Uint8Array] {
    const body = frameBody(frame)
    if (!this.accepted) return [frame.type, body]
    return compressBody(frame.type, body, this.#threshold, this.#deflate)
  }

  /** A received frame as the plain frame it stands for; undefined for the acceptance. Throws FrameError. */
  incoming(frame: Frame): Frame | undefined {
    if (!frame.compressed) return frame
    if (frame.type === FrameType.PONG) {
      this.accepted = true
      return undefined
    }
    if (frame.type === FrameType.PING) return undefined
    return inflateReceived(
      frame,
      (body, maxBytes) => this.#codec.inflate(body, maxBytes),
      this.#maxFrameBytes,
    )
  }
}
