import { shortAscii } from './ascii.js'
import { FrameError, FrameErrorCode } from './errors.js'
import { DecodedTextCache } from './text-cache.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The metadata key of a frame's credential (TCP). */
export const CREDENTIAL_METADATA_KEY = 'auth_token'
/** The header of a call's idempotency key on HTTP (`Idempotency-Key`, lower case as Node gives it). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key'
/** The metadata key of a call's idempotency key (TCP and WebSocket with `metadata=1`). */
export const IDEMPOTENCY_KEY_METADATA = 'idempotency_key'
/** The metadata key of a TCP REQUEST's payload format (`json`, `binary`). */
export const FORMAT_METADATA_KEY = 'format'
/** The metadata key of a TCP REQUEST's W3C trace context. */
export const TRACEPARENT_METADATA_KEY = 'traceparent'

/** Most entries a metadata map may have. */
export const MAX_METADATA_ENTRIES = 64

/**
 * TCP request metadata, the binary format's `map<string, string>`: count (4 bytes LE), then per entry
 * key and value, each a 4-byte LE byte length + UTF-8.
 */
export function encodeMetadata(meta: Record<string, string>): Uint8Array {
  const parts: Uint8Array[] = []
  let size = 4
  const entries = Object.entries(meta ?? {})
  if (entries.length > MAX_METADATA_ENTRIES) {
    throw new FrameError(FrameErrorCode.MALFORMED, `Metadata has more than ${MAX_METADATA_ENTRIES} entries`)
  }
  for (const [key, value] of entries) {
    if (typeof value !== 'string')
      throw new FrameError(FrameErrorCode.MALFORMED, `Metadata value of ${key} must be a string`)
    const k = encoder.encode(key)
    const v = encoder.encode(value)
    parts.push(k, v)
    size += 8 + k.length + v.length
  }
  const out = new Uint8Array(size)
  const view = new DataView(out.buffer)
  view.setUint32(0, entries.length, true)
  let offset = 4
  for (const p of parts) {
    view.setUint32(offset, p.length, true)
    out.set(p, offset + 4)
    offset += 4 + p.length
  }
  return out
}

/**
 * Keys decoded before: every request repeats the same few keys (`format`, `auth_token`). Keys only —
 * values (tokens) are never cached nor compared. At most 256 keys of at most {@link KEY_CACHE_MAX_BYTES}.
 */
const keys = new DecodedTextCache(256)
const KEY_CACHE_MAX_BYTES = 64

function malformedMetadata(message: string): FrameError {
  return new FrameError(FrameErrorCode.MALFORMED, `Malformed metadata: ${message}`)
}

function readU32LE(bytes: Uint8Array, offset: number): number {
  return (
    ((bytes[offset] as number) |
      ((bytes[offset + 1] as number) << 8) |
      ((bytes[offset + 2] as number) << 16) |
      ((bytes[offset + 3] as number) << 24)) >>>
    0
  )
}

function utf8At(bytes: Uint8Array, start: number, end: number, what: string): string {
  const ascii = shortAscii(bytes, start, end)
  if (ascii !== undefined) return ascii
  try {
    return decoder.decode(bytes.subarray(start, end))
  } catch {
    throw malformedMetadata(`${what} is not valid UTF-8`)
  }
}

function keyAt(bytes: Uint8Array, start: number, end: number): string {
  const length = end - start
  if (length > KEY_CACHE_MAX_BYTES) return utf8At(bytes, start, end, 'key')
  const cached = keys.find(bytes, start, end)
  if (cached !== undefined) return cached
  const key = utf8At(bytes, start, end, 'key')
  keys.remember(bytes, start, end, key)
  return key
}

/**
 * Splits a TCP REQUEST payload into its metadata and the model bytes after it (a view). An empty
 * payload is empty metadata and no model bytes. The map has no prototype; a repeated key, a length
 * past the end or invalid UTF-8 throws {@link FrameError} `TRV_FRAME_MALFORMED`.
 */
export function decodeMetadata(bytes: Uint8Array): { metadata: Record<string, string>; rest: Uint8Array } {
  const metadata: Record<string, string> = Object.create(null)
  const size = bytes.length
  if (size === 0) return { metadata, rest: bytes }
  if (size < 4) throw malformedMetadata('truncated entry count')
  const count = readU32LE(bytes, 0)
  if (count > MAX_METADATA_ENTRIES) throw malformedMetadata(`more than ${MAX_METADATA_ENTRIES} entries`)
  let offset = 4
  for (let i = 0; i < count; i++) {
    if (size - offset < 4) throw malformedMetadata('truncated key length')
    const keyLength = readU32LE(bytes, offset)
    if (keyLength > size - offset - 4) throw malformedMetadata(`key length ${keyLength} runs past the end`)
    const key = keyAt(bytes, offset + 4, offset + 4 + keyLength)
    offset += 4 + keyLength
    if (size - offset < 4) throw malformedMetadata('truncated value length')
    const valueLength = readU32LE(bytes, offset)
    if (valueLength > size - offset - 4)
      throw malformedMetadata(`value length ${valueLength} runs past the end`)
    const value = utf8At(bytes, offset + 4, offset + 4 + valueLength, 'value')
    offset += 4 + valueLength
    if (Object.hasOwn(metadata, key)) throw malformedMetadata(`repeated key ${JSON.stringify(key)}`)
    metadata[key] = value
  }
  return { metadata, rest: bytes.subarray(offset) }
}
