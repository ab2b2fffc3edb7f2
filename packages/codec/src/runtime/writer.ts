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

export class BinaryWriter {
  buf: Uint8Array
  view: DataView
  pos = 0

  constructor(initialSize = 256) {
    this.buf = new Uint8Array(initialSize)
    this.view = new DataView(this.buf.buffer)
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
    this.view = new DataView(next.buffer)
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
    this.view.setInt32(this.pos, v, true)
    this.pos += 4
  }

  /** int64 from a bigint (or a safe-integer number). Out of range is an EncodeError, never wrapped. */
  int64(v: bigint | number): void {
    if (this.pos + 8 > this.buf.length) this.grow(8)
    if (typeof v === 'bigint') {
      if (v < INT64_MIN || v > INT64_MAX) throw new EncodeError(`int64 out of range: ${v}`)
      this.view.setBigInt64(this.pos, v, true)
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
    this.view.setUint32(this.pos, lo, true)
    this.view.setInt32(this.pos + 4, hi, true)
  }

  float32(v: number): void {
    if (typeof v !== 'number') throw new EncodeError(`expected float32, got ${describe(v)}`)
    if (this.pos + 4 > this.buf.length) this.grow(4)
    this.view.setFloat32(this.pos, v, true)
    this.pos += 4
  }

  float64(v: number): void {
    if (typeof v !== 'number') throw new EncodeError(`expected float64, got ${describe(v)}`)
    if (this.pos + 8 > this.buf.length) this.grow(8)
    this.view.setFloat64(this.pos, v, true)
    this.pos += 8
  }

  /** A 4-byte little-endian length or count. */
  count(n: number): void {
    if (this.pos + 4 > this.buf.length) this.grow(4)
    this.view.setInt32(this.pos, n, true)
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
      for (let i = 0; i < n; i++) {
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
    this.view.setInt32(this.pos, p - start, true)
    this.pos = p
  }

  bytes(b: Uint8Array): void {
    if (!(b instanceof Uint8Array)) throw new EncodeError(`expected bytes (Uint8Array), got ${describe(b)}`)
    const n = b.length
    if (this.pos + 4 + n > this.buf.length) this.grow(4 + n)
    this.view.setInt32(this.pos, n, true)
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
    this.view.setInt32(at, this.pos - at - 4, true)
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

/**
 * Encodes one top-level message: the format version byte, then `write`'s output. Reuses one scratch
 * buffer (a nested call, e.g. from custom write logic, gets its own).
 */
export function encodeMessage<T>(write: (w: BinaryWriter, value: T) => void, value: T): Uint8Array {
  let w = scratch
  scratch = null
  if (w === null) w = new BinaryWriter(1024)
  try {
    w.pos = 0
    w.u8(FORMAT_VERSION)
    write(w, value)
    return w.finish()
  } finally {
    if (w.buf.length <= 1 << 20) scratch = w
  }
}
