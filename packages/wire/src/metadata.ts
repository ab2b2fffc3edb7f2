import { FrameError, FrameErrorCode } from './errors.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

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
 * Splits a TCP REQUEST payload into its metadata and the model bytes after it (a view). An empty
 * payload is empty metadata and no model bytes. The map has no prototype; a repeated key, a length
 * past the end or invalid UTF-8 throws {@link FrameError} `TRV_FRAME_MALFORMED`.
 */
export function decodeMetadata(bytes: Uint8Array): { metadata: Record<string, string>; rest: Uint8Array } {
  const metadata: Record<string, string> = Object.create(null)
  if (bytes.length === 0) return { metadata, rest: bytes }
  const fail = (message: string): never => {
    throw new FrameError(FrameErrorCode.MALFORMED, `Malformed metadata: ${message}`)
  }
  if (bytes.length < 4) fail('truncated entry count')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const count = view.getUint32(0, true)
  if (count > MAX_METADATA_ENTRIES) fail(`more than ${MAX_METADATA_ENTRIES} entries`)
  let offset = 4
  const readString = (what: string): string => {
    if (bytes.length - offset < 4) return fail(`truncated ${what} length`)
    const length = view.getUint32(offset, true)
    if (length > bytes.length - offset - 4) return fail(`${what} length ${length} runs past the end`)
    const start = offset + 4
    offset = start + length
    try {
      return decoder.decode(bytes.subarray(start, start + length))
    } catch {
      return fail(`${what} is not valid UTF-8`)
    }
  }
  for (let i = 0; i < count; i++) {
    const key = readString('key')
    const value = readString('value')
    if (Object.hasOwn(metadata, key)) fail(`repeated key ${JSON.stringify(key)}`)
    metadata[key] = value
  }
  return { metadata, rest: bytes.subarray(offset) }
}
