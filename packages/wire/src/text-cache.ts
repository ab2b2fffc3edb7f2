// Strings decoded from bytes before, found again by their bytes: a connection repeats the same few
// endpoint names, topics and metadata keys, and a UTF-8 decode per frame was the largest cost of decoding
// one. Keyed by an FNV-1a hash of the bytes; a hit compares the bytes (a collision is a miss, never a
// wrong string). The cached bytes are a copy: a frame's bytes are a view into a socket buffer that is
// reused. Emptied when full, so a client sending many different strings only makes misses. For strings
// that are not secrets (no constant-time concern).
export class DecodedTextCache {
  readonly #entries = new Map<number, { bytes: Uint8Array; text: string }>()
  readonly #capacity: number
  /** The hash of the bytes `find` was last asked about, for `remember`. */
  #hash = 0
  /** The entry found last: a connection calling one endpoint again finds it without a hash or a lookup. */
  #last: { bytes: Uint8Array; text: string } | undefined = undefined

  constructor(capacity: number) {
    this.#capacity = capacity
  }

  /** The string cached for `bytes[start, end)`, or undefined. */
  find(bytes: Uint8Array, start: number, end: number): string | undefined {
    const length = end - start
    const last = this.#last
    if (last !== undefined && same(last.bytes, bytes, start, length)) return last.text
    let hash = 0x811c9dc5
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ (bytes[i] as number), 0x01000193)
    this.#hash = hash
    const cached = this.#entries.get(hash)
    if (cached === undefined || !same(cached.bytes, bytes, start, length)) return undefined
    this.#last = cached
    return cached.text
  }

  /** Caches `text` as the decoding of `bytes[start, end)`, the bytes `find` was just asked about. */
  remember(bytes: Uint8Array, start: number, end: number, text: string): void {
    if (this.#entries.size >= this.#capacity) this.#entries.clear()
    this.#entries.set(this.#hash, { bytes: Uint8Array.from(bytes.subarray(start, end)), text })
  }
}

/** Whether `known` is `bytes[start, start + length)`. */
function same(known: Uint8Array, bytes: Uint8Array, start: number, length: number): boolean {
  if (known.length !== length) return false
  for (let i = 0; i < length; i++) if (known[i] !== bytes[start + i]) return false
  return true
}
