import { FrameError, FrameErrorCode } from './errors.js'
import {
  DEFAULT_MAX_FRAME_BYTES,
  FRAME_COMPRESSED,
  type Frame,
  frameBodyParts,
  frameTypeName,
  isKnownFrameType,
  parseFrameAt,
} from './frame.js'
import { SETUP } from './setup-errors.js'

/** Bytes of the TCP length field. */
export const TCP_LENGTH_BYTES = 4
/** Smallest value of the length field: request id (4) + type (1). */
export const TCP_MIN_LENGTH = 5

/** TCP frame: `length (4, BE) | request id (4, BE) | type (1) | body`; length counts what follows it. */
export function encodeTcpFrame(frame: Frame): Uint8Array {
  const [prefix, payload] = frameBodyParts(frame)
  const length = TCP_MIN_LENGTH + prefix.length + payload.length
  const out = new Uint8Array(TCP_LENGTH_BYTES + length)
  const view = new DataView(out.buffer)
  view.setUint32(0, length)
  view.setUint32(4, frame.requestId)
  out[8] = frame.type
  out.set(prefix, 9)
  out.set(payload, 9 + prefix.length)
  return out
}

/** A TCP frame from its parts, the type byte as given (the compression flag included). */
export function encodeTcpFrameBody(type: number, requestId: number, body: Uint8Array): Uint8Array {
  const length = TCP_MIN_LENGTH + body.length
  const out = new Uint8Array(TCP_LENGTH_BYTES + length)
  const view = new DataView(out.buffer)
  view.setUint32(0, length)
  view.setUint32(4, requestId)
  out[8] = type
  out.set(body, 9)
  return out
}

function readU32(bytes: Uint8Array, offset: number): number {
  return (
    (((bytes[offset] as number) << 24) >>> 0) +
    ((bytes[offset + 1] as number) << 16) +
    ((bytes[offset + 2] as number) << 8) +
    (bytes[offset + 3] as number)
  )
}

/**
 * Reassembles TCP frames from socket chunks. `push` returns every complete frame (a loop, no
 * recursion) and keeps the rest. A declared length over `maxFrameBytes` or under 5, or an unknown type,
 * throws {@link FrameError} as soon as the header is readable, before anything is buffered for it: the
 * claimed length is never allocated. Partial frames are kept as the received chunks and only joined
 * once complete. After a throw the reader is unusable (the stream is out of sync): close the connection.
 */
export class TcpFrameReader {
  readonly maxFrameBytes: number
  #chunks: Uint8Array[] = []
  #buffered = 0
  #failed: FrameError | undefined

  constructor(opts?: { maxFrameBytes?: number }) {
    const max = opts?.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
    if (!Number.isInteger(max) || max < TCP_MIN_LENGTH) {
      throw SETUP.TRV_WIRE_MAX_FRAME_BYTES(TCP_MIN_LENGTH)
    }
    this.maxFrameBytes = max
  }

  /** Bytes of an incomplete frame held by the reader (0 between frames). */
  get bufferedBytes(): number {
    return this.#buffered
  }

  push(chunk: Uint8Array): Frame[] {
    if (this.#failed) throw this.#failed
    if (chunk.length === 0) return []
    let data: Uint8Array
    if (this.#buffered === 0) {
      data = chunk
    } else {
      this.#chunks.push(chunk)
      this.#buffered += chunk.length
      const head = this.#peekHeader()
      if (head) this.#check(head.length, head.requestId, head.type)
      const needed = head ? TCP_LENGTH_BYTES + head.length : TCP_LENGTH_BYTES
      if (this.#buffered < needed) return []
      data = this.#join()
    }
    const frames: Frame[] = []
    let offset = 0
    try {
      while (data.length - offset >= TCP_LENGTH_BYTES) {
        const length = readU32(data, offset)
        const available = data.length - offset
        const requestId = available >= 8 ? readU32(data, offset + 4) : undefined
        const type = available >= 9 ? (data[offset + 8] as number) : undefined
        this.#check(length, requestId, type)
        if (available < TCP_LENGTH_BYTES + length) break
        frames.push(
          parseFrameAt(
            type as number,
            requestId as number,
            data,
            offset + 9,
            offset + TCP_LENGTH_BYTES + length,
          ),
        )
        offset += TCP_LENGTH_BYTES + length
      }
    } catch (err) {
      this.#chunks = []
      this.#buffered = 0
      this.#failed = err as FrameError
      throw err
    }
    // Keep the incomplete rest as a copy, so the (possibly large) chunk it came from can be freed.
    const rest = data.length - offset
    this.#chunks = rest > 0 ? [data.slice(offset)] : []
    this.#buffered = rest
    return frames
  }

  #check(length: number, requestId: number | undefined, type: number | undefined): void {
    if (length < TCP_MIN_LENGTH) {
      this.#fail(
        FrameErrorCode.MALFORMED,
        `Frame length ${length} is under the minimum of ${TCP_MIN_LENGTH}`,
        requestId,
      )
    }
    if (length > this.maxFrameBytes) {
      this.#fail(
        FrameErrorCode.TOO_LARGE,
        `Frame length ${length} is over the limit of ${this.maxFrameBytes} bytes`,
        requestId,
      )
    }
    // The compression flag's frame is checked when parsed (PROTOCOL.md "Compression").
    if (type !== undefined && !isKnownFrameType(type & ~FRAME_COMPRESSED)) {
      this.#fail(FrameErrorCode.UNKNOWN_TYPE, `Unknown frame type ${frameTypeName(type)}`, requestId)
    }
  }

  #fail(code: FrameError['code'], message: string, requestId: number | undefined): never {
    const err = new FrameError(code as never, message, requestId)
    this.#chunks = []
    this.#buffered = 0
    this.#failed = err
    throw err
  }

  /** Reads length, request id and type across the buffered chunks when enough bytes are there. */
  #peekHeader(): { length: number; requestId: number | undefined; type: number | undefined } | undefined {
    if (this.#buffered < TCP_LENGTH_BYTES) return undefined
    const head = new Uint8Array(Math.min(9, this.#buffered))
    let filled = 0
    for (const c of this.#chunks) {
      const n = Math.min(c.length, head.length - filled)
      head.set(c.subarray(0, n), filled)
      filled += n
      if (filled === head.length) break
    }
    return {
      length: readU32(head, 0),
      requestId: head.length >= 8 ? readU32(head, 4) : undefined,
      type: head.length >= 9 ? head[8] : undefined,
    }
  }

  #join(): Uint8Array {
    const out = new Uint8Array(this.#buffered)
    let offset = 0
    for (const c of this.#chunks) {
      out.set(c, offset)
      offset += c.length
    }
    this.#chunks = []
    this.#buffered = 0
    return out
  }
}
