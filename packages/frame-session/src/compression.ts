// Compressed frames on the server side (PROTOCOL.md "Compression"): the client's offer (PING 0x88) is
// answered with the acceptance (PONG 0x89) when the server compresses, bodies of at least the threshold
// then go out as raw DEFLATE when smaller, and compressed frames received are inflated within the
// carrier's frame limit (a bomb never inflates past it).
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import {
  compressBody,
  DEFAULT_MAX_FRAME_BYTES,
  FRAME_COMPRESSED,
  type Frame,
  FrameType,
  type Inflate,
  inflateReceived,
} from '@trivium/wire'
import type { FrameCarrier } from './carrier.js'
import { isSharedBody, markShared } from './shared-items.js'

const EMPTY = new Uint8Array(0)
/** Stops at `maxBytes` (zlib throws ERR_BUFFER_TOO_LARGE): a bomb never inflates past the limit. */
const inflateRaw: Inflate = (body, maxBytes) =>
  inflateRawSync(body, { maxOutputLength: Math.max(1, maxBytes) })

/**
 * The deflated form of a body many sessions send (a stream item fanned out: shared-items.ts), made once
 * for all of them and shared too (kept beside the body, gone with it); other bodies are deflated per send.
 */
const deflatedShared = new WeakMap<Uint8Array, Uint8Array>()

function deflate(body: Uint8Array): Uint8Array {
  if (!isSharedBody(body)) return deflateRawSync(body)
  let packed = deflatedShared.get(body)
  if (packed === undefined) {
    packed = deflateRawSync(body)
    markShared(packed)
    deflatedShared.set(body, packed)
  }
  return packed
}

export class SessionCompression {
  /** Bodies of at least this many bytes go out compressed: set once the peer offered (PING 0x88). */
  #compressFrom: number | undefined
  readonly #carrier: FrameCarrier
  /** The server's threshold; undefined: compression is off and a compressed frame is refused. */
  readonly threshold: number | undefined

  constructor(carrier: FrameCarrier, threshold: number | undefined) {
    this.#carrier = carrier
    this.threshold = threshold
  }

  /** The peer offered and the server accepted: bodies may go out compressed. */
  get active(): boolean {
    return this.#compressFrom !== undefined
  }

  /** A flagged PING (the offer) is answered, with the acceptance when compression is on; a flagged PONG is ignored. */
  answerOffer(frame: Frame): void {
    if (frame.type === FrameType.PONG) return
    const threshold = this.threshold
    if (threshold !== undefined) this.#compressFrom = threshold
    const pong = threshold === undefined ? FrameType.PONG : FrameType.PONG | FRAME_COMPRESSED
    this.#carrier.sendBody(pong, frame.requestId, EMPTY)
  }

  /** A compressed frame as the plain frame it stands for. Throws FrameError (too large, malformed). */
  inflate(frame: Frame): Frame {
    return inflateReceived(frame, inflateRaw, this.#carrier.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES)
  }

  /** Sends a frame's body, compressed when the peer offered and the body is over the threshold. */
  send(type: number, requestId: number, body: Uint8Array | string): void {
    const from = this.#compressFrom
    // A string's UTF-8 form is at most 3 bytes per code unit: shorter ones are never measured.
    if (from === undefined || body.length * (typeof body === 'string' ? 3 : 1) < from) {
      this.#carrier.sendBody(type, requestId, body)
      return
    }
    const [sentType, sent] = compressBody(
      type,
      typeof body === 'string' ? Buffer.from(body) : body,
      from,
      deflate,
    )
    this.#carrier.sendBody(sentType, requestId, sent)
  }
}
