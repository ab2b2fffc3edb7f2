// Value semantics shared by generated models: equality, hashing, and the JSON form of each primitive.
// Decisions (PROTOCOL.md "Binary format"):
//   - floats compare with SameValueZero: NaN equals NaN (so equals is an equivalence and agrees
//     with hashCode) and 0 equals -0 (the JSON form cannot carry -0; the binary form keeps it);
//   - dates are equal when their millisecond times are; bytes when every byte is; maps when they hold
//     the same keys with equal values, in any order; lists element by element, in order;
//   - int64 is a bigint; its JSON form is a decimal string (a JSON number cannot carry 64 bits);
//   - datetime's JSON form is an ISO 8601 UTC string with milliseconds; bytes' is standard base64;
//   - non-finite floats are the JSON strings "NaN", "Infinity", "-Infinity".
import type { FieldError } from './errors.js'

// ---------- equality ----------

export function eqDate(a: Date, b: Date): boolean {
  return a.getTime() === b.getTime()
}

export function eqBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** SameValueZero on numbers: NaN equals NaN, 0 equals -0. */
export function eqFloat(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b))
}

/** Deep equality of `any` values (JSON data): numbers by SameValueZero, objects ignoring key order. */
export function eqAny(a: unknown, b: unknown): boolean {
  if (a === b || (typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b)))
    return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!eqAny(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b)) return false
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && eqFloat(a.getTime(), b.getTime())
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && eqBytes(a, b)
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined)
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined)
  if (ka.length !== kb.length) return false
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false
    if (!eqAny((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false
  }
  return true
}

// ---------- hashing (32-bit, stable across runs) ----------

export function hashCombine(h: number, x: number): number {
  return (Math.imul(h, 31) + x) | 0
}

export function hashString(s: string): number {
  let h = 0x811c9dc5 | 0
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  return h
}

const f64 = new Float64Array(1)
const i32 = new Int32Array(f64.buffer)

export function hashNumber(n: number): number {
  if ((n | 0) === n) return n // 0 and -0 hash alike
  if (Number.isNaN(n)) return 0x7ff80000
  f64[0] = n
  return (i32[0]! ^ i32[1]!) | 0
}

export function hashBigInt(b: bigint): number {
  if (typeof b !== 'bigint') return hashNumber(b as unknown as number)
  const lo = Number(BigInt.asIntN(32, b))
  const hi = Number(BigInt.asIntN(32, b >> 32n))
  // Equal to hashNumber for values that fit in int32, so 5n and 5 hash alike.
  return hi === 0 || (hi === -1 && lo < 0) ? lo : (lo ^ Math.imul(hi, 0x9e3779b1)) | 0
}

export function hashBool(b: boolean): number {
  return b ? 1231 : 1237
}

export function hashDate(d: Date): number {
  return hashNumber(d.getTime())
}

export function hashBytes(b: Uint8Array): number {
  let h = 0x811c9dc5 | 0
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 16777619)
  return h
}

export function hashAny(v: unknown): number {
  if (v === null || v === undefined) return 0
  switch (typeof v) {
    case 'boolean':
      return hashBool(v)
    case 'number':
      return hashNumber(v)
    case 'string':
      return hashString(v)
    case 'bigint':
      return hashBigInt(v)
    case 'object': {
      if (Array.isArray(v)) {
        let h = 1
        for (const x of v) h = hashCombine(h, hashAny(x))
        return h
      }
      if (v instanceof Date) return hashDate(v)
      if (v instanceof Uint8Array) return hashBytes(v)
      let h = 0
      for (const [k, x] of Object.entries(v)) if (x !== undefined) h = (h + (hashString(k) ^ hashAny(x))) | 0
      return h
    }
    default:
      return 0
  }
}

// ---------- JSON form: checks used by generated fromJSON ----------

/** Field path of a child: `items.2.title`; the root is `(body)`. */
export function joinPath(path: string, key: string | number): string {
  return path === '' ? String(key) : `${path}.${key}`
}

export function fail(e: FieldError[], path: string, key: string | number, message: string): void {
  e.push({ field: key === '' ? path || '(body)' : joinPath(path, key), message })
}

export function isObject(j: unknown): j is Record<string, unknown> {
  return typeof j === 'object' && j !== null && !Array.isArray(j)
}

/** A required value that is missing (undefined) or null. */
function absent(j: unknown, e: FieldError[], p: string, k: string | number): boolean {
  if (j === undefined) {
    fail(e, p, k, 'is required')
    return true
  }
  if (j === null) {
    fail(e, p, k, 'must not be null')
    return true
  }
  return false
}

export function jString(j: unknown, e: FieldError[], p: string, k: string | number): string {
  if (typeof j === 'string') return j
  if (!absent(j, e, p, k)) fail(e, p, k, 'must be string')
  return ''
}

export function jBool(j: unknown, e: FieldError[], p: string, k: string | number): boolean {
  if (typeof j === 'boolean') return j
  if (!absent(j, e, p, k)) fail(e, p, k, 'must be boolean')
  return false
}

export function jInt32(j: unknown, e: FieldError[], p: string, k: string | number): number {
  if (typeof j === 'number' && (j | 0) === j) return j
  if (!absent(j, e, p, k)) {
    fail(
      e,
      p,
      k,
      // An integer outside int32, including one beyond float range (JSON `1e400` is Infinity).
      typeof j === 'number' && (Number.isInteger(j) || Math.abs(j) === Number.POSITIVE_INFINITY)
        ? 'must be a 32-bit integer'
        : 'must be integer',
    )
  }
  return 0
}

const INT64_TEXT = /^-?(0|[1-9][0-9]{0,18})$/
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** int64 from a decimal string, or from a JSON number that is a safe integer (never a rounded one). */
export function jInt64(j: unknown, e: FieldError[], p: string, k: string | number): bigint {
  if (typeof j === 'string' && INT64_TEXT.test(j)) {
    const v = BigInt(j)
    if (v >= INT64_MIN && v <= INT64_MAX) return v
    fail(e, p, k, 'must be a 64-bit integer')
    return 0n
  }
  if (typeof j === 'number' && Number.isSafeInteger(j)) return BigInt(j)
  if (!absent(j, e, p, k)) {
    fail(
      e,
      p,
      k,
      typeof j === 'number' && Number.isInteger(j)
        ? 'must be a decimal string when beyond ±2^53 (a JSON number would be rounded)'
        : 'must be a 64-bit integer as a decimal string',
    )
  }
  return 0n
}

export function jFloat64(j: unknown, e: FieldError[], p: string, k: string | number): number {
  if (typeof j === 'number') return j
  if (j === 'NaN') return Number.NaN
  if (j === 'Infinity') return Number.POSITIVE_INFINITY
  if (j === '-Infinity') return Number.NEGATIVE_INFINITY
  if (!absent(j, e, p, k)) fail(e, p, k, 'must be number')
  return 0
}

/** float32: like float64, rounded to the nearest float32 (what the binary form carries). */
export function jFloat32(j: unknown, e: FieldError[], p: string, k: string | number): number {
  return Math.fround(jFloat64(j, e, p, k))
}

/** JSON form of a float: a number, or "NaN" / "Infinity" / "-Infinity". */
export function floatToJSON(v: number): number | string {
  return Number.isFinite(v) ? v : String(v)
}

const DATE_TIME = /^(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/** datetime from an RFC 3339 string (precision: milliseconds; extra digits are dropped). */
export function jDatetime(j: unknown, e: FieldError[], p: string, k: string | number): Date {
  if (typeof j === 'string' && DATE_TIME.test(j)) {
    const ms = Date.parse(j)
    if (!Number.isNaN(ms)) return new Date(ms)
  }
  if (!absent(j, e, p, k)) fail(e, p, k, 'must be an RFC 3339 date-time string')
  return new Date(0)
}

/**
 * Canonical-length base64 (groups of 4, `=` padding only at the end). A loop, not a regular
 * expression: a repeated group over a 14 MB upload overflowed the regexp stack (a 500).
 */
export function isBase64(text: string): boolean {
  const n = text.length
  if (n % 4 !== 0) return false
  let end = n
  if (n > 0 && text.charCodeAt(n - 1) === 61) end = text.charCodeAt(n - 2) === 61 ? n - 2 : n - 1
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    const ok = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47
    if (!ok) return false
  }
  return true
}

export function jBytes(j: unknown, e: FieldError[], p: string, k: string | number): Uint8Array {
  if (typeof j === 'string' && isBase64(j)) return fromBase64(j)
  if (!absent(j, e, p, k)) fail(e, p, k, 'must be a base64 string')
  return new Uint8Array(0)
}

/** `any`: any JSON value; missing is null. */
export function jAny(j: unknown): unknown {
  return j === undefined ? null : j
}

export function jMapKeyInt32(key: string, e: FieldError[], p: string): number {
  const n = Number(key)
  if (/^-?(0|[1-9][0-9]*)$/.test(key) && (n | 0) === n) return n
  fail(e, p, key, 'key must be a 32-bit integer')
  return 0
}

export function jMapKeyInt64(key: string, e: FieldError[], p: string): bigint {
  if (INT64_TEXT.test(key)) {
    const v = BigInt(key)
    if (v >= INT64_MIN && v <= INT64_MAX) return v
  }
  fail(e, p, key, 'key must be a 64-bit integer')
  return 0n
}

// ---------- base64 (browser-safe, no Buffer) ----------

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const LOOKUP = new Uint8Array(128)
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i

export function toBase64(b: Uint8Array): string {
  let out = ''
  let i = 0
  for (; i + 2 < b.length; i += 3) {
    const n = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!
  }
  if (i < b.length) {
    const n = (b[i]! << 16) | ((b[i + 1] ?? 0) << 8)
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]!
    out += i + 1 < b.length ? `${ALPHABET[(n >> 6) & 63]!}=` : '=='
  }
  return out
}

/** Decodes standard base64 (input already checked against the alphabet and padding). */
export function fromBase64(s: string): Uint8Array {
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0
  const out = new Uint8Array((s.length / 4) * 3 - pad)
  let o = 0
  for (let i = 0; i < s.length; i += 4) {
    const n =
      (LOOKUP[s.charCodeAt(i)]! << 18) |
      (LOOKUP[s.charCodeAt(i + 1)]! << 12) |
      (LOOKUP[s.charCodeAt(i + 2)]! << 6) |
      LOOKUP[s.charCodeAt(i + 3)]!
    out[o++] = n >> 16
    if (o < out.length) out[o++] = (n >> 8) & 255
    if (o < out.length) out[o++] = n & 255
  }
  return out
}
