// BinaryReader: reads the binary format defensively. Every length and count is checked against the
// bytes left BEFORE anything is allocated; every failure is a DecodeError. Browser-safe.
import { DecodeError } from './errors.js'
import { AnyTag, FORMAT_VERSION, MAX_DATE_MS } from './writer.js'

/** Default limit on nested models and `any` containers. */
export const DEFAULT_MAX_DEPTH = 64

export interface ReaderOptions {
  /** Nesting limit for models and `any` lists/objects (default 64). */
  maxDepth?: number
}

const utf8 = new TextDecoder('utf-8', { fatal: true })
// Scratch for floats: bytes are copied in and read back (no DataView per reader).
const f64 = new Float64Array(1)
const f64b = new Uint8Array(f64.buffer)
const f32 = new Float32Array(1)
const f32b = new Uint8Array(f32.buffer)
const SHORT = 32
const CODES: number[][] = Array.from({ length: SHORT + 1 }, (_, n) => new Array<number>(n).fill(0))
// Cache of short ASCII strings by hash (one string per slot; a collision replaces the entry).
const CACHE_MASK = 4095
// Filled with a string longer than any cached one, so an empty slot never matches.
const cache: string[] = new Array<string>(CACHE_MASK + 1).fill('-'.repeat(SHORT + 1))
/** The bytes of each cached string, SHORT bytes per slot. */
const cacheBytes = new Uint8Array((CACHE_MASK + 1) * SHORT)
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

export class BinaryReader {
  readonly buf: Uint8Array
  pos: number
  /** End of the current model (or of the message). Reads never go past it. */
  end: number
  depth = 0
  readonly maxDepth: number

  constructor(bytes: Uint8Array, options?: ReaderOptions) {
    this.buf = bytes
    this.pos = 0
    this.end = bytes.length
    this.maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH
  }

  private dataView: DataView | undefined
  /** A DataView over the bytes (made on first use). */
  get view(): DataView {
    if (this.dataView === undefined) {
      this.dataView = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength)
    }
    return this.dataView
  }

  /** Throws a DecodeError at the current offset. */
  fail(reason: string): never {
    throw new DecodeError(reason, this.pos)
  }

  private truncated(n: number): never {
    throw new DecodeError(
      `truncated: needed ${n} bytes at offset ${this.pos}, ${this.end - this.pos} left`,
      this.pos,
    )
  }

  /** Bytes left in the current model (or message). */
  get remaining(): number {
    return this.end - this.pos
  }

  u8(): number {
    if (this.pos >= this.end) this.truncated(1)
    return this.buf[this.pos++]!
  }

  bool(): boolean {
    if (this.pos >= this.end) this.truncated(1)
    const b = this.buf[this.pos]!
    if (b > 1) this.fail(`invalid bool byte 0x${b.toString(16).padStart(2, '0')} at offset ${this.pos}`)
    this.pos++
    return b === 1
  }

  /** Optional marker: true for 0x01 (a value follows), false for 0x00. */
  presence(): boolean {
    if (this.pos >= this.end) this.truncated(1)
    const b = this.buf[this.pos]!
    if (b > 1) this.fail(`invalid optional marker 0x${b.toString(16).padStart(2, '0')} at offset ${this.pos}`)
    this.pos++
    return b === 1
  }

  private i32(p: number): number {
    const b = this.buf
    return b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)
  }

  int32(): number {
    if (this.end - this.pos < 4) this.truncated(4)
    const v = this.i32(this.pos)
    this.pos += 4
    return v
  }

  int64(): bigint {
    if (this.end - this.pos < 8) this.truncated(8)
    const lo = this.i32(this.pos) >>> 0
    const hi = this.i32(this.pos + 4)
    this.pos += 8
    // Small values (the common case) without BigInt arithmetic.
    if ((hi === 0 && lo < 0x80000000) || (hi === -1 && lo >= 0x80000000))
      return BigInt(hi === 0 ? lo : lo - 4294967296)
    return (BigInt(hi) << 32n) | BigInt(lo)
  }

  float32(): number {
    if (this.end - this.pos < 4) this.truncated(4)
    const b = this.buf
    const p = this.pos
    if (LITTLE_ENDIAN) {
      f32b[0] = b[p]!
      f32b[1] = b[p + 1]!
      f32b[2] = b[p + 2]!
      f32b[3] = b[p + 3]!
    } else {
      for (let i = 0; i < 4; i++) f32b[i] = b[p + 3 - i]!
    }
    this.pos = p + 4
    return f32[0]!
  }

  float64(): number {
    if (this.end - this.pos < 8) this.truncated(8)
    const b = this.buf
    const p = this.pos
    if (LITTLE_ENDIAN) {
      f64b[0] = b[p]!
      f64b[1] = b[p + 1]!
      f64b[2] = b[p + 2]!
      f64b[3] = b[p + 3]!
      f64b[4] = b[p + 4]!
      f64b[5] = b[p + 5]!
      f64b[6] = b[p + 6]!
      f64b[7] = b[p + 7]!
    } else {
      for (let i = 0; i < 8; i++) f64b[i] = b[p + 7 - i]!
    }
    this.pos = p + 8
    return f64[0]!
  }

  /** A 4-byte length of `unit`-byte elements, checked: not negative and not more than the bytes left. */
  length(unit = 1): number {
    if (this.end - this.pos < 4) this.truncated(4)
    const n = this.i32(this.pos)
    if (n < 0) this.fail(`negative length ${n} at offset ${this.pos}`)
    this.pos += 4
    if (n * unit > this.end - this.pos) {
      this.pos -= 4
      this.fail(`length ${n} at offset ${this.pos} exceeds the ${this.end - this.pos - 4} bytes left`)
    }
    return n
  }

  /** A list or map count; `minItemSize` is the fewest bytes one item (or pair) can take. */
  count(minItemSize: number): number {
    if (this.end - this.pos < 4) this.truncated(4)
    const n = this.i32(this.pos)
    if (n < 0) this.fail(`negative count ${n} at offset ${this.pos}`)
    this.pos += 4
    if (n * minItemSize > this.end - this.pos) {
      this.pos -= 4
      this.fail(`count ${n} at offset ${this.pos} exceeds the ${this.end - this.pos - 4} bytes left`)
    }
    return n
  }

  string(): string {
    const n = this.length(1)
    const start = this.pos
    this.pos = start + n
    if (n <= SHORT) {
      // Short ASCII strings: one pass checks ASCII and hashes; a repeated string (a key, a tag, an
      // enum-like value) comes from a small cache, others from String.fromCharCode over a reused
      // array (faster than TextDecoder for short strings).
      const buf = this.buf
      let h = n
      let or = 0
      for (let i = start; i < start + n; i++) {
        const c = buf[i]!
        or |= c
        h = Math.imul(h ^ c, 0x01000193)
      }
      if (or < 0x80) {
        const slot = (h ^ (h >>> 15)) & CACHE_MASK
        const hit = cache[slot]!
        const at = slot * SHORT
        if (hit.length === n) {
          let i = 0
          while (i < n && cacheBytes[at + i] === buf[start + i]) i++
          if (i === n) return hit
        }
        const codes = CODES[n]!
        for (let i = 0; i < n; i++) {
          const c = buf[start + i]!
          codes[i] = c
          cacheBytes[at + i] = c
        }
        const str: string = String.fromCharCode.apply(null, codes)
        cache[slot] = str
        return str
      }
    }
    return this.utf8(start, n)
  }

  private utf8(start: number, n: number): string {
    try {
      return utf8.decode(this.buf.subarray(start, start + n))
    } catch {
      this.pos = start
      return this.fail(`invalid UTF-8 in string at offset ${start - 4}`)
    }
  }

  bytes(): Uint8Array {
    const n = this.length(1)
    const out = this.buf.slice(this.pos, this.pos + n)
    this.pos += n
    return out
  }

  /** datetime: int64 ms since the Unix epoch, within the range of a JavaScript Date. */
  datetime(): Date {
    if (this.end - this.pos < 8) this.truncated(8)
    const lo = this.i32(this.pos) >>> 0
    const hi = this.i32(this.pos + 4)
    const ms = hi * 4294967296 + lo
    if (ms > MAX_DATE_MS || ms < -MAX_DATE_MS) this.fail(`datetime out of range at offset ${this.pos}`)
    this.pos += 8
    return new Date(ms)
  }

  /** Enters a model: reads its length and limits reads to it. Returns the outer end, for `exitModel`. */
  enterModel(): number {
    const n = this.length(1)
    if (++this.depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth} levels`)
    const outer = this.end
    this.end = this.pos + n
    return outer
  }

  /** Leaves a model: skips fields this reader does not know (a newer writer's), restores the outer end. */
  exitModel(outer: number): void {
    this.pos = this.end
    this.end = outer
    this.depth--
  }

  /** True while the current model still has bytes: a field appended by a newer writer is present. */
  more(): boolean {
    return this.pos < this.end
  }

  any(): unknown {
    const tag = this.u8()
    switch (tag) {
      case AnyTag.Null:
        return null
      case AnyTag.False:
        return false
      case AnyTag.True:
        return true
      case AnyTag.Int32:
        return this.int32()
      case AnyTag.Float64:
        return this.float64()
      case AnyTag.String:
        return this.string()
      case AnyTag.List: {
        const n = this.count(1)
        if (++this.depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth} levels`)
        const out = new Array<unknown>(n)
        for (let i = 0; i < n; i++) out[i] = this.any()
        this.depth--
        return out
      }
      case AnyTag.Object: {
        const n = this.count(5)
        if (++this.depth > this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth} levels`)
        const out: Record<string, unknown> = {}
        for (let i = 0; i < n; i++) {
          const at = this.pos
          const k = this.string()
          if (Object.hasOwn(out, k)) {
            this.pos = at
            this.fail(`duplicate key ${JSON.stringify(k)} in any object at offset ${at}`)
          }
          const v = this.any()
          if (k === '__proto__')
            Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
          else out[k] = v
        }
        this.depth--
        return out
      }
      default:
        this.pos--
        return this.fail(`invalid any tag 0x${tag.toString(16).padStart(2, '0')} at offset ${this.pos}`)
    }
  }

  /** Reads and checks the format version byte of a top-level message. */
  version(): void {
    const v = this.u8()
    if (v !== FORMAT_VERSION) {
      this.pos--
      this.fail(`unsupported binary format version ${v} (this reader knows ${FORMAT_VERSION})`)
    }
  }

  /** Ends a top-level message: nothing may follow. */
  finish(): void {
    if (this.pos !== this.buf.length) {
      this.fail(`${this.buf.length - this.pos} trailing bytes after the message at offset ${this.pos}`)
    }
  }
}

/** Decodes one top-level message: version byte, `read`, and no trailing bytes. */
export function decodeMessage<T>(
  read: (r: BinaryReader) => T,
  bytes: Uint8Array,
  options?: ReaderOptions,
): T {
  if (!(bytes instanceof Uint8Array)) throw new DecodeError('expected a Uint8Array', 0)
  const r = new BinaryReader(bytes, options)
  r.version()
  const value = read(r)
  r.finish()
  return value
}
