// The metadata of one connection's REQUEST frames (PROTOCOL.md "TCP"). A client sends the same block
// on every call (its `auth_token`, its `format`): when a frame starts with the bytes of the block decoded
// last, its strings are reused instead of decoded again, and the token is then the same string, whose
// hash auth's cache lookup has already computed. Each call still gets a map of its own.
// One reader per connection: the block compared against is that connection's own previous one, so the
// comparison, which is not constant-time, tells a client nothing but what it sent itself. Only blocks
// that decoded without error are remembered, so a reused result is exactly what decoding would give.
import { metadataCredential } from '@trivium/core'
import type { RequestParts } from '@trivium/frame-session'
import { decodeMetadata, FORMAT_METADATA_KEY, TIMEOUT_METADATA_KEY } from '@trivium/wire'

/** Largest metadata block a reader remembers; a larger one is decoded on every frame. */
export const METADATA_MEMO_MAX_BYTES = 4096

/** Blocks up to this size are compared by a loop, larger ones by `Buffer.compare`. */
const LOOP_COMPARE_BYTES = 32

/**
 * Whether `bytes` starts with `block`. A short block (a `format` key alone) by a loop: the native
 * compare's call and argument checks cost ~800 instructions (bench/README.md "Transport cost per
 * message"); a block with a token by `Buffer.compare`, cheaper at that length.
 */
function startsWith(bytes: Uint8Array, block: Buffer): boolean {
  const n = block.length
  if (bytes.length < n) return false
  if (n > LOOP_COMPARE_BYTES) return block.compare(bytes, 0, n) === 0
  for (let i = 0; i < n; i++) if (block[i] !== bytes[i]) return false
  return true
}

/** The keys and values of no block (shared, never written: a reader replaces its arrays, not their items). */
const NONE: string[] = []

export class MetadataReader {
  /** A copy of the last block (a frame's bytes are a view into a socket buffer that is reused). */
  #block: Buffer | undefined
  #keys: string[] = NONE
  #values: string[] = NONE
  /**
   * The block's `format` and credential, read once with it: a read of a key, or of a missing one, from a
   * map without a prototype (a dictionary) costs ~130–240 instructions (bench/README.md "Transport cost
   * per message").
   */
  #formatName: string | undefined = undefined
  #credential: string | null = null
  /** The block's `timeout_ms` (null: none), read once with it for core's deadline. */
  #timeout: string | null = null

  /**
   * A REQUEST payload's parts: its metadata, the `format` it names, its credential (`auth_token`, as
   * core's `metadataCredential` reads it; null for none), its `timeout_ms` (null for none), and the
   * model's bytes after it.
   */
  read(bytes: Uint8Array): RequestParts & { metadata: Record<string, string>; timeout: string | null } {
    const block = this.#block
    if (block !== undefined && startsWith(bytes, block)) {
      const metadata: Record<string, string> = Object.create(null)
      const keys = this.#keys
      const values = this.#values
      for (let i = 0; i < keys.length; i++) metadata[keys[i] as string] = values[i] as string
      return {
        metadata,
        formatName: this.#formatName,
        credential: this.#credential,
        timeout: this.#timeout,
        payload: bytes.subarray(block.length),
      }
    }
    const decoded = decodeMetadata(bytes)
    const metadata = decoded.metadata
    const formatName = metadata[FORMAT_METADATA_KEY]
    const credential = metadataCredential(metadata) ?? null
    const timeout = metadata[TIMEOUT_METADATA_KEY] ?? null
    const size = bytes.length - decoded.rest.length
    if (size > 0 && size <= METADATA_MEMO_MAX_BYTES) {
      // A copy with a memory of its own: a copy from Node's shared pool would keep that pool's whole
      // 8 KiB slab for the connection's life (≈3 KiB per idle connection, bench/density).
      const block = Buffer.allocUnsafeSlow(size)
      block.set(bytes.subarray(0, size))
      this.#block = block
      this.#keys = Object.keys(metadata)
      this.#values = this.#keys.map((key) => metadata[key] as string)
      this.#formatName = formatName
      this.#credential = credential
      this.#timeout = timeout
    }
    return { metadata, formatName, credential, timeout, payload: decoded.rest }
  }

  /**
   * Drops the remembered block (the carrier's idle connection: its copy and strings, ~1 KiB with a bearer
   * token, bench/density); the next frame is decoded, as the first one was.
   */
  forget(): void {
    this.#block = undefined
    this.#keys = NONE
    this.#values = NONE
    this.#formatName = undefined
    this.#credential = null
    this.#timeout = null
  }
}
