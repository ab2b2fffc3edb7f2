// A binary layout derived from a JSON Schema: the spec's binary format (PROTOCOL.md "Binary format")
// for schemas written in TypeBox, Zod or plain JSON Schema, with the same bytes the generator writes
// for the equivalent schema-format model. Only shapes the format has a place for are derived: objects
// of known fields, strings, booleans, numbers (float64), integers whose bounds fit int32 or int64,
// arrays, and optional or nullable fields; anything else (unions, maps, tuples, unbounded integers,
// references) has no layout and stays JSON-only. Browser-safe.

import type { BinaryReader } from './reader.js'
import { decodeMessage } from './reader.js'
import type { JsonSchema } from './types.js'
import { type BinaryWriter, encodeMessage } from './writer.js'

type Prim = 'string' | 'int32' | 'int64' | 'float64' | 'bool'
interface Field {
  readonly name: string
  readonly type: Layout
  /** Written with a presence byte (the generator's `T?`): not required, or nullable. */
  readonly optional: boolean
  /** A null presence reads as `null` (the schema allows null), else as an absent field. */
  readonly nullable: boolean
}
export type Layout =
  | { readonly kind: 'prim'; readonly name: Prim }
  | { readonly kind: 'list'; readonly item: Layout }
  | { readonly kind: 'nullable'; readonly inner: Layout }
  | { readonly kind: 'model'; readonly fields: readonly Field[] }

const INT32_MIN = -(2 ** 31)
const INT32_MAX = 2 ** 31 - 1

const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The schema without its `null` alternative, and whether it had one (`type: [T, 'null']`, `anyOf`). */
function splitNull(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const type = schema.type
  if (Array.isArray(type) && type.length === 2 && type.includes('null')) {
    return { schema: { ...schema, type: type.find((t) => t !== 'null') }, nullable: true }
  }
  const anyOf = schema.anyOf ?? schema.oneOf
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const rest = anyOf.filter((s) => !(isObject(s) && s.type === 'null' && Object.keys(s).length === 1))
    if (rest.length === 1 && isObject(rest[0])) return { schema: rest[0], nullable: true }
  }
  return { schema, nullable: false }
}

function bound(schema: JsonSchema, inclusive: string, exclusive: string, step: 1 | -1): number | undefined {
  const a = schema[inclusive]
  const b = schema[exclusive]
  if (typeof a === 'number')
    return typeof b === 'number' ? (step > 0 ? Math.max(a, b + 1) : Math.min(a, b - 1)) : a
  return typeof b === 'number' ? b + step : undefined
}

function integerLayout(schema: JsonSchema): Layout | undefined {
  const min = bound(schema, 'minimum', 'exclusiveMinimum', 1)
  const max = bound(schema, 'maximum', 'exclusiveMaximum', -1)
  if (min === undefined || max === undefined) return undefined
  if (min >= INT32_MIN && max <= INT32_MAX) return { kind: 'prim', name: 'int32' }
  if (min >= Number.MIN_SAFE_INTEGER && max <= Number.MAX_SAFE_INTEGER) return { kind: 'prim', name: 'int64' }
  return undefined
}

function objectLayout(schema: JsonSchema): Layout | undefined {
  const properties = schema.properties
  if (!isObject(properties)) return undefined
  const required = new Set(Array.isArray(schema.required) ? schema.required : [])
  const fields: Field[] = []
  for (const [name, property] of Object.entries(properties)) {
    if (!isObject(property)) return undefined
    const split = splitNull(property)
    const type = layoutOf(split.schema)
    if (type === undefined) return undefined
    const optional = split.nullable || !required.has(name)
    fields.push({ name, type, optional, nullable: split.nullable })
  }
  return { kind: 'model', fields }
}

function layoutOf(schema: JsonSchema): Layout | undefined {
  if (schema.$ref !== undefined || schema.anyOf !== undefined || schema.oneOf !== undefined) {
    const split = splitNull(schema)
    if (!split.nullable) return undefined
    const inner = layoutOf(split.schema)
    return inner === undefined ? undefined : { kind: 'nullable', inner }
  }
  switch (schema.type) {
    case 'string':
      return { kind: 'prim', name: 'string' }
    case 'boolean':
      return { kind: 'prim', name: 'bool' }
    case 'number':
      return { kind: 'prim', name: 'float64' }
    case 'integer':
      return integerLayout(schema)
    case 'array': {
      if (!isObject(schema.items) || schema.prefixItems !== undefined) return undefined
      const item = layoutOf(schema.items)
      return item === undefined ? undefined : { kind: 'list', item }
    }
    case 'object':
      return objectLayout(schema)
    default:
      return undefined
  }
}

/** The binary layout of a JSON Schema whose top level is an object, or undefined when it has none. */
export function deriveLayout(schema: object | undefined): Layout | undefined {
  if (!isObject(schema) || schema.type !== 'object') return undefined
  return layoutOf(schema)
}

const MIN_SIZE: Record<Prim, number> = { string: 4, int32: 4, int64: 8, float64: 8, bool: 1 }
const minSize = (t: Layout): number => (t.kind === 'prim' ? MIN_SIZE[t.name] : t.kind === 'nullable' ? 1 : 4)

function write(w: BinaryWriter, t: Layout, v: unknown): void {
  switch (t.kind) {
    case 'prim':
      if (t.name === 'string') w.string(v as string)
      else if (t.name === 'int32') w.int32(v as number)
      else if (t.name === 'int64') w.int64(v as number)
      else if (t.name === 'float64') w.float64(v as number)
      else w.bool(v as boolean)
      return
    case 'nullable':
      w.presence(v != null)
      if (v != null) write(w, t.inner, v)
      return
    case 'list': {
      const items = v as unknown[]
      w.count(items.length)
      for (const item of items) write(w, t.item, item)
      return
    }
    case 'model': {
      const at = w.beginModel()
      const o = v as Record<string, unknown>
      for (const f of t.fields) {
        const x = o[f.name]
        if (!f.optional) write(w, f.type, x)
        else {
          w.presence(x != null)
          if (x != null) write(w, f.type, x)
        }
      }
      w.endModel(at)
    }
  }
}

function read(r: BinaryReader, t: Layout): unknown {
  switch (t.kind) {
    case 'prim':
      if (t.name === 'int64') {
        const n = r.int64()
        if (n < BigInt(Number.MIN_SAFE_INTEGER) || n > BigInt(Number.MAX_SAFE_INTEGER)) {
          r.fail(`int64 ${n} is beyond the safe integer range`)
        }
        return Number(n)
      }
      return r[t.name]()
    case 'nullable':
      return r.presence() ? read(r, t.inner) : null
    case 'list': {
      const n = r.count(minSize(t.item))
      const a = new Array<unknown>(n)
      for (let i = 0; i < n; i++) a[i] = read(r, t.item)
      return a
    }
    case 'model': {
      const outer = r.enterModel()
      const o: Record<string, unknown> = {}
      for (const f of t.fields) {
        if (!f.optional) o[f.name] = read(r, f.type)
        // A trailing optional field an older writer left out reads as absent (as generated code does).
        else if (r.pos < r.end && r.presence()) o[f.name] = read(r, f.type)
        else if (f.nullable) o[f.name] = null
      }
      r.exitModel(outer)
      return o
    }
  }
}

/** The binary form of a layout: `encode` writes the version byte and the model; `decode` reads them. */
export interface DerivedBinaryForm {
  readonly layout: Layout
  encode(value: unknown): Uint8Array
  /** The JSON-form value the bytes hold (plain data): the model's own checks still have to run. */
  decode(bytes: Uint8Array): unknown
}

/** The binary form of a JSON Schema, or undefined when the schema has no binary layout. */
export function deriveBinaryForm(schema: object | undefined): DerivedBinaryForm | undefined {
  const layout = deriveLayout(schema)
  if (layout === undefined) return undefined
  const writeTop = (w: BinaryWriter, v: unknown) => write(w, layout, v)
  const readTop = (r: BinaryReader) => read(r, layout)
  return {
    layout,
    encode: (value) => encodeMessage(writeTop, value),
    decode: (bytes) => decodeMessage(readTop, bytes),
  }
}
