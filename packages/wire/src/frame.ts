import { FrameError, FrameErrorCode } from './errors.js'
import { DecodedTextCache } from './text-cache.js'

export const FrameType = {
  REQUEST: 0x01,
  RESPONSE: 0x02,
  ERROR: 0x03,
  STREAM_ITEM: 0x04,
  STREAM_END: 0x05,
  CANCEL: 0x06,
  PUSH: 0x07,
  PING: 0x08,
  PONG: 0x09,
  GOAWAY: 0x0a,
  SUBSCRIBE: 0x0b,
  UNSUBSCRIBE: 0x0c,
  /** One request item of a client or bidirectional stream (PROTOCOL.md "Client and bidirectional streams"). */
  CLIENT_ITEM: 0x0d,
  /** The client's half-close of its request stream. */
  CLIENT_END: 0x0e,
  /** Server → client: 4-byte BE count of further CLIENT_ITEMs the client may send on the stream. */
  CREDIT: 0x0f,
  /** Server → client: the server reads no more items on the stream (the call goes on). */
  STOP_SENDING: 0x10,
} as const
export type FrameTypeName = keyof typeof FrameType

export interface Frame {
  type: number
  requestId: number
  /**
   * Received with the compression flag (PROTOCOL.md "Compression"): `payload` is the whole body, still
   * raw DEFLATE; `inflateFrame` turns it into a plain frame. On PING/PONG it is the offer/acceptance.
   */
  compressed?: boolean
  /** REQUEST only. */
  endpoint?: string
  /** PUSH, SUBSCRIBE, UNSUBSCRIBE. */
  topic?: string
  payload: Uint8Array
}

/** 1 MiB of payload plus 1 KiB for the header, the endpoint name and TCP metadata. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024 + 1024
/** Longest endpoint name or topic, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 255

const EMPTY = new Uint8Array(0)
const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

const TYPE_NAMES: Record<number, string> = {}
for (const [name, code] of Object.entries(FrameType)) TYPE_NAMES[code] = name

/** The name of a frame type (`REQUEST`), or `0x..` for an unknown one. */
export function frameTypeName(type: number): string {
  return TYPE_NAMES[type] ?? `0x${type.toString(16).padStart(2, '0')}`
}

/** The type byte's high bit: the body is raw DEFLATE (on PING/PONG: the compression offer/acceptance). */
export const FRAME_COMPRESSED = 0x80

export function isKnownFrameType(type: number): boolean {
  return Number.isInteger(type) && type >= FrameType.REQUEST && type <= FrameType.STOP_SENDING
}

/** Bytes of a CREDIT body: one big-endian uint32. */
export const CREDIT_BYTES = 4

/** The body of a CREDIT frame granting `count` (1 … 2^32 − 1) more items. */
export function encodeCredit(count: number): Uint8Array {
  if (!Number.isInteger(count) || count < 1 || count > 0xffffffff)
    throw malformed('CREDIT count must be an integer from 1 to 4294967295')
  const out = new Uint8Array(CREDIT_BYTES)
  new DataView(out.buffer).setUint32(0, count)
  return out
}

/** The count of a CREDIT frame's payload (checked by the decoder: 4 bytes, at least 1). */
export function readCredit(payload: Uint8Array): number {
  return new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0)
}

function checkCredit(payload: Uint8Array, requestId: number): void {
  if (payload.length !== CREDIT_BYTES)
    throw malformed(`CREDIT body must be ${CREDIT_BYTES} bytes (the count of items)`, requestId)
  if (readCredit(payload) === 0) throw malformed('CREDIT count must be at least 1', requestId)
}

/** Frame types whose request id must not be 0 (0 is reserved for server-initiated frames). */
function needsRequestId(type: number): boolean {
  return (
    type === FrameType.REQUEST ||
    type === FrameType.CANCEL ||
    type === FrameType.SUBSCRIBE ||
    type === FrameType.UNSUBSCRIBE ||
    type === FrameType.CLIENT_ITEM ||
    type === FrameType.CLIENT_END
  )
}

function hasEmptyBody(type: number): boolean {
  return (
    type === FrameType.STREAM_END ||
    type === FrameType.CANCEL ||
    type === FrameType.PING ||
    type === FrameType.PONG ||
    type === FrameType.CLIENT_END ||
    type === FrameType.STOP_SENDING
  )
}

function malformed(message: string, requestId?: number): FrameError {
  return new FrameError(FrameErrorCode.MALFORMED, message, requestId)
}

function encodeName(kind: string, name: unknown, requestId: number): Uint8Array {
  if (typeof name !== 'string' || name.length === 0)
    throw malformed(`${kind} must be a non-empty string`, requestId)
  if (name.includes('\u0000')) throw malformed(`${kind} must not contain 0x00`, requestId)
  const bytes = encoder.encode(name)
  if (bytes.length > MAX_NAME_BYTES)
    throw malformed(`${kind} is longer than ${MAX_NAME_BYTES} bytes`, requestId)
  return bytes
}

/**
 * The body of a frame (everything after type and request id) as up to two parts: a prefix (name +
 * 0x00, or the topic) and the payload. Validates the frame.
 */
export function frameBodyParts(frame: Frame): [Uint8Array, Uint8Array] {
  const { type, requestId } = frame
  if (!Number.isInteger(requestId) || requestId < 0 || requestId > 0xffffffff) {
    throw malformed('requestId must be an integer from 0 to 4294967295')
  }
  if (!isKnownFrameType(type)) {
    throw new FrameError(FrameErrorCode.UNKNOWN_TYPE, `Unknown frame type ${frameTypeName(type)}`, requestId)
  }
  if (needsRequestId(type) && requestId === 0)
    throw malformed(`${frameTypeName(type)} needs a request id other than 0`, 0)
  const payload = frame.payload ?? EMPTY
  if (!(payload instanceof Uint8Array)) throw malformed('payload must be a Uint8Array', requestId)
  switch (type) {
    case FrameType.REQUEST:
    case FrameType.PUSH: {
      const name = encodeName(
        type === FrameType.REQUEST ? 'endpoint' : 'topic',
        type === FrameType.REQUEST ? frame.endpoint : frame.topic,
        requestId,
      )
      const prefix = new Uint8Array(name.length + 1)
      prefix.set(name)
      return [prefix, payload]
    }
    case FrameType.SUBSCRIBE:
    case FrameType.UNSUBSCRIBE:
      if (payload.length > 0) throw malformed(`${frameTypeName(type)} has no payload`, requestId)
      return [encodeName('topic', frame.topic, requestId), EMPTY]
    case FrameType.CREDIT:
      checkCredit(payload, requestId)
      return [EMPTY, payload]
    default:
      if (hasEmptyBody(type) && payload.length > 0)
        throw malformed(`${frameTypeName(type)} has no payload`, requestId)
      return [EMPTY, payload]
  }
}

function decodeName(kind: string, bytes: Uint8Array, requestId: number): string {
  if (bytes.length === 0) throw malformed(`Empty ${kind}`, requestId)
  if (bytes.length > MAX_NAME_BYTES)
    throw malformed(`${kind} is longer than ${MAX_NAME_BYTES} bytes`, requestId)
  try {
    return decoder.decode(bytes)
  } catch {
    throw malformed(`${kind} is not valid UTF-8`, requestId)
  }
}

/**
 * Endpoint names and topics decoded before (at most 512 names, each at most MAX_NAME_BYTES: a client
 * sending many names only makes misses).
 */
const names = new DecodedTextCache(512)

/** The name in `bytes[start, end)`, which holds no 0x00 (the caller found the terminator at `end`). */
function nameAt(kind: string, bytes: Uint8Array, start: number, end: number, requestId: number): string {
  const length = end - start
  if (length === 0) throw malformed(`Empty ${kind}`, requestId)
  if (length > MAX_NAME_BYTES) throw malformed(`${kind} is longer than ${MAX_NAME_BYTES} bytes`, requestId)
  const cached = names.find(bytes, start, end)
  if (cached !== undefined) return cached
  const name = decodeName(kind, bytes.subarray(start, end), requestId)
  names.remember(bytes, start, end, name)
  return name
}

/**
 * Builds a frame from its type, request id and body (a view; the payload is a subarray of it, not a
 * copy). Shared by the WebSocket and TCP decoders.
 */
export function parseFrameBody(type: number, requestId: number, body: Uint8Array): Frame {
  return parseFrameAt(type, requestId, body, 0, body.length)
}

/**
 * {@link parseFrameBody} for the body at `bytes[start, end)`, without a view per step: the payload is
 * the one subarray made.
 */
export function parseFrameAt(
  type: number,
  requestId: number,
  bytes: Uint8Array,
  start: number,
  end: number,
): Frame {
  if (type >= FRAME_COMPRESSED) return compressedFrameAt(type, requestId, bytes, start, end)
  if (!isKnownFrameType(type)) {
    throw new FrameError(FrameErrorCode.UNKNOWN_TYPE, `Unknown frame type ${frameTypeName(type)}`, requestId)
  }
  if (needsRequestId(type) && requestId === 0)
    throw malformed(`${frameTypeName(type)} needs a request id other than 0`, 0)
  switch (type) {
    case FrameType.REQUEST:
    case FrameType.PUSH: {
      const kind = type === FrameType.REQUEST ? 'endpoint name' : 'topic'
      // Search the terminator only where a valid name can end: never scan a whole large payload.
      const limit = Math.min(end, start + MAX_NAME_BYTES + 1)
      let zero = start
      while (zero < limit && bytes[zero] !== 0) zero++
      if (zero === limit) throw malformed(`Missing 0x00 terminator after the ${kind}`, requestId)
      const name = nameAt(kind, bytes, start, zero, requestId)
      const payload = bytes.subarray(zero + 1, end)
      return type === FrameType.REQUEST
        ? { type, requestId, endpoint: name, payload }
        : { type, requestId, topic: name, payload }
    }
    case FrameType.SUBSCRIBE:
    case FrameType.UNSUBSCRIBE:
      return {
        type,
        requestId,
        topic: decodeName('topic', bytes.subarray(start, end), requestId),
        payload: EMPTY,
      }
    case FrameType.CREDIT: {
      const payload = bytes.subarray(start, end)
      checkCredit(payload, requestId)
      return { type, requestId, payload }
    }
    default:
      if (hasEmptyBody(type) && end > start)
        throw malformed(`${frameTypeName(type)} has no payload`, requestId)
      return { type, requestId, payload: bytes.subarray(start, end) }
  }
}

/** A known type with the compression flag; its body is parsed once inflated (`inflateFrame`). */
function compressedFrameAt(
  type: number,
  requestId: number,
  bytes: Uint8Array,
  start: number,
  end: number,
): Frame {
  const base = type & ~FRAME_COMPRESSED
  if (
    !isKnownFrameType(base) ||
    ((hasEmptyBody(base) || base === FrameType.GOAWAY) && base !== FrameType.PING && base !== FrameType.PONG)
  ) {
    throw new FrameError(FrameErrorCode.UNKNOWN_TYPE, `Unknown frame type ${frameTypeName(type)}`, requestId)
  }
  if (needsRequestId(base) && requestId === 0)
    throw malformed(`${frameTypeName(base)} needs a request id other than 0`, 0)
  if ((base === FrameType.PING || base === FrameType.PONG) && end > start)
    throw malformed(`${frameTypeName(base)} has no payload`, requestId)
  return { type: base, requestId, compressed: true, payload: bytes.subarray(start, end) }
}

/** Inflates a body: returns at most `maxBytes` bytes, or throws. */
export type Inflate = (body: Uint8Array, maxBytes: number) => Uint8Array

/**
 * A received compressed frame as the plain frame it stands for. `maxBodyBytes` bounds the inflated body
 * (the frame limit minus the 5 header bytes); `inflate` must stop there and throw (zlib's
 * `maxOutputLength` does). Throws {@link FrameError}: TOO_LARGE over the limit, MALFORMED for bad data.
 */
export function inflateFrame(
  frame: Frame,
  inflate: Inflate,
  maxBodyBytes: number,
  maxFrameBytes: number,
): Frame {
  let body: Uint8Array
  try {
    body = inflate(frame.payload, maxBodyBytes)
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new FrameError(
        FrameErrorCode.TOO_LARGE,
        `Frame inflates to more than the limit of ${maxFrameBytes} bytes`,
        frame.requestId,
      )
    }
    throw malformed('Compressed frame body is not valid deflate data', frame.requestId)
  }
  return parseFrameAt(frame.type, frame.requestId, body, 0, body.length)
}

/** The body of a frame (what follows type and request id) as one array. */
export function frameBody(frame: Frame): Uint8Array {
  const [prefix, payload] = frameBodyParts(frame)
  if (prefix.length === 0) return payload
  const out = new Uint8Array(prefix.length + payload.length)
  out.set(prefix)
  out.set(payload, prefix.length)
  return out
}

/** A WebSocket frame from its parts, the type byte as given (the compression flag included). */
export function encodeWsFrameBody(type: number, requestId: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + body.length)
  out[0] = type
  new DataView(out.buffer).setUint32(1, requestId)
  out.set(body, 5)
  return out
}

/** WebSocket frame: `type (1) | request id (4, BE) | body`. */
export function encodeWsFrame(frame: Frame): Uint8Array {
  const [prefix, payload] = frameBodyParts(frame)
  const out = new Uint8Array(5 + prefix.length + payload.length)
  out[0] = frame.type
  new DataView(out.buffer).setUint32(1, frame.requestId)
  out.set(prefix, 5)
  out.set(payload, 5 + prefix.length)
  return out
}

/** Decodes one WebSocket message. The payload is a view into `bytes`. Throws {@link FrameError}. */
export function decodeWsFrame(bytes: Uint8Array, opts?: { maxFrameBytes?: number }): Frame {
  if (!(bytes instanceof Uint8Array)) throw malformed('A frame must be binary')
  const max = opts?.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES
  if (bytes.length < 5) throw malformed(`Frame of ${bytes.length} bytes is shorter than its 5-byte header`)
  const requestId =
    (((bytes[1] as number) << 24) >>> 0) +
    ((bytes[2] as number) << 16) +
    ((bytes[3] as number) << 8) +
    (bytes[4] as number)
  if (bytes.length > max) {
    throw new FrameError(
      FrameErrorCode.TOO_LARGE,
      `Frame of ${bytes.length} bytes is over the limit of ${max} bytes`,
      requestId,
    )
  }
  return parseFrameAt(bytes[0] as number, requestId, bytes, 5, bytes.length)
}
