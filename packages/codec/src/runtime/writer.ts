// BinaryWriter: the spec's binary format (PROTOCOL.md "Binary format"). Little-endian integers, IEEE
// floats, 4-byte lengths and counts, 0x00/0x01 for bools and optional markers. Browser-safe.
import { EncodeError } from './errors.js'

/** Version byte that starts every top-level message. */
export const FORMAT_VERSION = 1

/** Tags of the self-describing `any` encoding. */
export const AnyTag = {
  Null: 0x00,
  False: 0x01,
  True: 0x02,
  Int32: 0x03,
  Float64: 0x04,
  String: 0x05,
  List: 0x06,
  Object: 0x07,
} as const

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** Largest absolute value of a JavaScript Date, in ms (ECMA-262 time value range). */
export const MAX_DATE_MS = 8.64e15

const textEncoder = new TextEncoder()

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number' || typeof value === 'bigint') return `${typeof value} ${String(value)}`
  return typeof value === 'object' ? (value.constructor?.name ?? 'object') : typeof value
}

// Scratch for floats: written here and copied out byte by byte (no DataView per buffer).
const f64 = new Float64Array(1)
const f64b = new Uint8Array(f64.buffer)
const f32 = new Float32Array(1)
const f32b = new Uint8Array(f32.buffer)
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

export class BinaryWriter {
  buf: Uint8Array
  pos = 0

  constructor(initialSize = 256) {
    this.buf = new Uint8Array(initialSize)
  }

  /** A DataView over the buffer (for custom write logic; the buffer changes when it grows). */
  get view(): DataView {
    return new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength)
  }

  /** Stores a 32-bit little-endian integer at `p` (room already ensured). */
  private put32(p: number, v: number): void {
    const b = this.buf
    b[p] = v
    b[p + 1] = v >>> 8
    b[p + 2] = v >>> 16
    b[p + 3] = v >>> 24
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n)
  }

  private grow(n: number): void {
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
  }

  /** The bytes written so far, as a new array. */
  finish(): Uint8Array {
    return this.buf.slice(0, this.pos)
  }

  reset(): void {
    this.pos = 0
  }

  u8(v: number): void {
    if (this.pos + 1 > this.buf.length) this.grow(1)
    this.buf[this.pos++] = v
  }

  bool(v: boolean): void {
    if (v !== true && v !== false) throw new EncodeError(`expected bool, got ${describe(v)}`)
    if (this.pos + 1 > this.buf.length) this.grow(1)
    this.buf[this.pos++] = v ? 1 : 0
  }

  /** Optional marker: 0x01 (a value follows) or 0x00 (null). */
  presence(present: boolean): void {
    if (this.pos + 1 > this.buf.length) this.grow(1)
    this.buf[this.pos++] = present ? 1 : 0
  }

  int32(v: number): void {
    if ((v | 0) !== v) throw new EncodeError(`expected int32, got ${describe(v)}`)
    if (this.pos + 4 > this.buf.length) this.grow(4)
    this.put32(this.pos, v)
    this.pos += 4
  }

  /** int64 from a bigint (or a safe-integer number). Out of range is an EncodeError, never wrapped. */
  int64(v: bigint | number): void {
    if (this.pos + 8 > this.buf.length) this.grow(8)
    if (typeof v === 'bigint') {
      if (v < INT64_MIN || v > INT64_MAX) throw new EncodeError(`int64 out of range: ${v}`)
      this.put32(this.pos, Number(BigInt.asUintN(32, v)))
      this.put32(this.pos + 4, Number(BigInt.asIntN(32, v >> 32n)))
    } else {
      if (!Number.isSafeInteger(v)) throw new EncodeError(`expected int64, got ${describe(v)}`)
      this.int64Number(v)
    }
    this.pos += 8
  }

  private int64Number(v: number): void {
    // Two's complement split of a safe integer without BigInt.
    const lo = v >>> 0
    const hi = Math.floor((v - lo) / 4294967296)
    this.put32(this.pos, lo)
    this.put32(this.pos + 4, hi)
  }

  float32(v: number): void {
    if (typeof v !== 'number') throw new EncodeError(`expected float32, got ${describe(v)}`)
    if (this.pos + 4 > this.buf.length) this.grow(4)
    f32[0] = v
    const b = this.buf
    const p = this.pos
    if (LITTLE_ENDIAN) {
      b[p] = f32b[0]!
      b[p + 1] = f32b[1]!
      b[p + 2] = f32b[2]!
      b[p + 3] = f32b[3]!
    } else {
      for (let i = 0; i < 4; i++) b[p + i] = f32b[3 - i]!
    }
    this.pos = p + 4
  }

  float64(v: number): void {
    if (typeof v !== 'number') throw new EncodeError(`expected float64, got ${describe(v)}`)
    if (this.pos + 8 > this.buf.length) this.grow(8)
    f64[0] = v
    const b = this.buf
    const p = this.pos
    if (LITTLE_ENDIAN) {
      b[p] = f64b[0]!
      b[p + 1] = f64b[1]!
      b[p + 2] = f64b[2]!
      b[p + 3] = f64b[3]!
      b[p + 4] = f64b[4]!
      b[p + 5] = f64b[5]!
      b[p + 6] = f64b[6]!
      b[p + 7] = f64b[7]!
    } else {
      for (let i = 0; i < 8; i++) b[p + i] = f64b[7 - i]!
    }
    this.pos = p + 8
  }

  /** A 4-byte little-endian length or count. */
  count(n: number): void {
    if (this.pos + 4 > this.buf.length) this.grow(4)
    this.put32(this.pos, n)
    this.pos += 4
  }

  string(s: string): void {
    if (typeof s !== 'string') throw new EncodeError(`expected string, got ${describe(s)}`)
    const n = s.length
    if (this.pos + 4 + n * 3 > this.buf.length) this.grow(4 + n * 3)
    const buf = this.buf
    const start = this.pos + 4
    let p = start
    if (n < 48) {
      // ASCII runs in a tight loop; anything else falls through to the general UTF-8 loop.
      let i = 0
      for (; i < n; i++) {
        const c = s.charCodeAt(i)
        if (c >= 0x80) break
        buf[p++] = c
      }
      for (; i < n; i++) {
        let c = s.charCodeAt(i)
        if (c < 0x80) {
          buf[p++] = c
        } else if (c < 0x800) {
          buf[p++] = 0xc0 | (c >> 6)
          buf[p++] = 0x80 | (c & 0x3f)
        } else {
          if (c >= 0xd800 && c <= 0xdfff) {
            const d = i + 1 < n ? s.charCodeAt(i + 1) : 0
            if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
              i++
              c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
              buf[p++] = 0xf0 | (c >> 18)
              buf[p++] = 0x80 | ((c >> 12) & 0x3f)
              buf[p++] = 0x80 | ((c >> 6) & 0x3f)
              buf[p++] = 0x80 | (c & 0x3f)
              continue
            }
            c = 0xfffd // a lone surrogate is written as U+FFFD, like TextEncoder
          }
          buf[p++] = 0xe0 | (c >> 12)
          buf[p++] = 0x80 | ((c >> 6) & 0x3f)
          buf[p++] = 0x80 | (c & 0x3f)
        }
      }
    } else {
      p += textEncoder.encodeInto(s, buf.subarray(start)).written
    }
    this.put32(this.pos, p - start)
    this.pos = p
  }

  bytes(b: Uint8Array): void {
    if (!(b instanceof Uint8Array)) throw new EncodeError(`expected bytes (Uint8Array), got ${describe(b)}`)
    const n = b.length
    if (this.pos + 4 + n > this.buf.length) this.grow(4 + n)
    this.put32(this.pos, n)
    this.buf.set(b, this.pos + 4)
    this.pos += 4 + n
  }

  /** datetime: int64 milliseconds since 1970-01-01T00:00:00Z. */
  datetime(d: Date): void {
    const ms = d instanceof Date ? d.getTime() : Number.NaN
    if (Number.isNaN(ms)) throw new EncodeError(`expected a valid Date, got ${describe(d)}`)
    if (this.pos + 8 > this.buf.length) this.grow(8)
    this.int64Number(ms)
    this.pos += 8
  }

  /** Starts a model: reserves its 4-byte length. Pass the result to `endModel`. */
  beginModel(): number {
    if (this.pos + 4 > this.buf.length) this.grow(4)
    const at = this.pos
    this.pos += 4
    return at
  }

  endModel(at: number): void {
    this.put32(at, this.pos - at - 4)
  }

  /** `any`: a tag byte, then the value (JSON data model; objects with toJSON are written as its result). */
  any(v: unknown, depth = 0): void {
    if (depth > 100) throw new EncodeError('any value nested deeper than 100 levels')
    if (v === null || v === undefined) {
      this.u8(AnyTag.Null)
      return
    }
    switch (typeof v) {
      case 'boolean':
        this.u8(v ? AnyTag.True : AnyTag.False)
        break
      case 'number':
        if ((v | 0) === v && !Object.is(v, -0)) {
          this.u8(AnyTag.Int32)
          this.int32(v)
        } else {
          this.u8(AnyTag.Float64)
          this.float64(v)
        }
        break
      case 'string':
        this.u8(AnyTag.String)
        this.string(v)
        break
      case 'object': {
        if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
          this.any((v as { toJSON(): unknown }).toJSON(), depth + 1)
        } else if (Array.isArray(v)) {
          this.u8(AnyTag.List)
          this.count(v.length)
          for (let i = 0; i < v.length; i++) this.any(v[i], depth + 1)
        } else {
          const keys = Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          this.u8(AnyTag.Object)
          this.count(keys.length)
          for (const k of keys) {
            this.string(k)
            this.any((v as Record<string, unknown>)[k], depth + 1)
          }
        }
        break
      }
      default:
        throw new EncodeError(`any: cannot encode a ${typeof v}`)
    }
  }
}

let scratch: BinaryWriter | null = null

// Output slabs. Allocating an ArrayBuffer costs far more than encoding a small message (V8 puts every
// typed array over 64 bytes off-heap), so messages up to POOL_MAX bytes are copied into a shared slab
// and returned as views of it (as protobufjs and Node's Buffer pool do). A returned array is never
// written again; its `.buffer` may hold other messages, so use `byteOffset`/`byteLength` with it.
const SLAB_SIZE = 16384
const POOL_MAX = 2048
let slab = new Uint8Array(0)
let slabPos = 0

function output(buf: Uint8Array, n: number): Uint8Array {
  if (n <= 64 || n > POOL_MAX) return buf.slice(0, n) // small arrays live on the JS heap: cheap
  let at = slabPos
  // A detached slab (its buffer transferred) has length 0 and is replaced like a full one.
  if (at + n > slab.length) {
    slab = new Uint8Array(SLAB_SIZE)
    at = 0
  }
  slab.set(buf.subarray(0, n), at)
  slabPos = (at + n + 7) & ~7
  return slab.subarray(at, at + n)
}

/**
 * Encodes one top-level message: the format version byte, then `write`'s output. Reuses one scratch
 * buffer (a nested call, e.g. from custom write logic, gets its own).
 */
export function encodeMessage<T>(write: (w: BinaryWriter, value: T) => void, value: T): Uint8Array {
  let w = scratch
  scratch = null
  if (w === null) w = new BinaryWriter(1024)
  try {
    w.buf[0] = FORMAT_VERSION
    w.pos = 1
    write(w, value)
    return output(w.buf, w.pos)
  } finally {
    if (w.buf.length <= 1 << 20) scratch = w
  }
}
