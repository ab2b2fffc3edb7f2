// The emitter's per-type expressions: each TypeNode's TypeScript type, binary read/write, JSON
// read/write, equality and hash, as source text. Containers (`[int32?]`, `{string: Foo}`) get one set of
// helper functions per distinct type, shared by the module and numbered in the order first used.
import { RT } from './emit-shared.js'
import type { TypeNode } from './schema.js'
import { typeKey } from './schema.js'

export class TypeEmitter {
  /** The container helpers' source, in the order first used. */
  readonly helpers: string[] = []
  private readonly helperIds = new Map<string, number>()

  // ----- TypeScript types -----

  ts(t: TypeNode, flavor: 'class' | 'data'): string {
    switch (t.kind) {
      case 'prim':
        return {
          string: 'string',
          int32: 'number',
          int64: 'bigint',
          float32: 'number',
          float64: 'number',
          bool: 'boolean',
          datetime: 'Date',
          bytes: 'Uint8Array',
        }[t.name]
      case 'any':
        return 'unknown'
      case 'nullable':
        return `${this.ts(t.inner, flavor)} | null`
      case 'list': {
        const item = this.ts(t.item, flavor)
        return `readonly ${item.includes(' ') ? `(${item})` : item}[]`
      }
      case 'map':
        return `ReadonlyMap<${this.ts({ kind: 'prim', name: t.key }, flavor)}, ${this.ts(t.value, flavor)}>`
      case 'ref':
        return flavor === 'class' ? t.model : `${t.model}Data`
      case 'custom':
        return `${RT}.CustomValue<typeof ${t.name}>`
    }
  }

  // ----- helpers for containers -----

  private helperId(t: TypeNode): number {
    const key = typeKey(t)
    let id = this.helperIds.get(key)
    if (id !== undefined) return id
    id = this.helperIds.size + 1
    this.helperIds.set(key, id)
    this.emitHelpers(t, id)
    return id
  }

  private emitHelpers(t: TypeNode, id: number): void {
    const cls = this.ts(t, 'class')
    const data = this.ts(t, 'data')
    const lines: string[] = [`// ${typeKey(t)}`]
    if (t.kind === 'list') lines.push(...this.listHelpers(t, id, cls, data))
    else if (t.kind === 'map') lines.push(...this.mapHelpers(t, id, cls, data))
    this.helpers.push(lines.join('\n'))
  }

  /** A list type's reader, writer, JSON reader and writer, equality and hash. */
  private listHelpers(
    t: Extract<TypeNode, { kind: 'list' }>,
    id: number,
    cls: string,
    data: string,
  ): string[] {
    const item = t.item
    const itemCls = this.ts(item, 'class')
    return [
      `function $r${id}(r: ${RT}.BinaryReader): ${cls} {`,
      `  const n = r.count(${this.minSize(item)})`,
      `  const a = new Array<${itemCls}>(n)`,
      `  for (let i = 0; i < n; i++) a[i] = ${this.read(item)}`,
      '  return a',
      '}',
      `function $w${id}(w: ${RT}.BinaryWriter, v: ${data}): void {`,
      '  w.count(v.length)',
      '  for (let i = 0; i < v.length; i++) {',
      '    const x = v[i] as (typeof v)[number]',
      `    ${this.write(item, 'x')}`,
      '  }',
      '}',
      `function $j${id}(j: unknown, e: ${RT}.FieldError[], p: string, k: string | number): ${cls} {`,
      '  if (!Array.isArray(j)) {',
      `    ${RT}.fail(e, p, k, j === undefined ? 'is required' : j === null ? 'must not be null' : 'must be array')`,
      '    return []',
      '  }',
      `  const q = k === '' ? p : ${RT}.joinPath(p, k)`,
      `  const a = new Array<${itemCls}>(j.length)`,
      `  for (let i = 0; i < j.length; i++) a[i] = ${this.fromJSON(item, 'j[i]', 'q', 'i')}`,
      '  return a',
      '}',
      `function $t${id}(v: ${data}): unknown[] {`,
      '  const a = new Array<unknown>(v.length)',
      '  for (let i = 0; i < v.length; i++) {',
      '    const x = v[i] as (typeof v)[number]',
      `    a[i] = ${this.toJSON(item, 'x')}`,
      '  }',
      '  return a',
      '}',
      `function $e${id}(a: ${data}, b: ${data}): boolean {`,
      '  if (a.length !== b.length) return false',
      '  for (let i = 0; i < a.length; i++) {',
      '    const x = a[i] as (typeof a)[number]',
      '    const y = b[i] as (typeof b)[number]',
      `    if (!(${this.equals(item, 'x', 'y')})) return false`,
      '  }',
      '  return true',
      '}',
      `function $h${id}(v: ${data}): number {`,
      '  let h = 1',
      '  for (let i = 0; i < v.length; i++) {',
      '    const x = v[i] as (typeof v)[number]',
      `    h = ${RT}.hashCombine(h, ${this.hash(item, 'x')})`,
      '  }',
      '  return h',
      '}',
    ]
  }

  /** A map type's reader, writer, JSON reader and writer, equality and hash. */
  private mapHelpers(t: Extract<TypeNode, { kind: 'map' }>, id: number, cls: string, data: string): string[] {
    const key: TypeNode = { kind: 'prim', name: t.key }
    const keyTs = this.ts(key, 'class')
    const valCls = this.ts(t.value, 'class')
    const keyFromText =
      t.key === 'string'
        ? 'key'
        : t.key === 'int32'
          ? `${RT}.jMapKeyInt32(key, e, q)`
          : `${RT}.jMapKeyInt64(key, e, q)`
    return [
      `function $r${id}(r: ${RT}.BinaryReader): ${cls} {`,
      `  const n = r.count(${this.minSize(key)} + ${this.minSize(t.value)})`,
      `  const m = new Map<${keyTs}, ${valCls}>()`,
      '  for (let i = 0; i < n; i++) {',
      '    const at = r.pos',
      `    const key = ${this.read(key)}`,
      `    if (m.has(key)) { r.pos = at; r.fail(\`duplicate map key at offset \${at}\`) }`,
      `    m.set(key, ${this.read(t.value)})`,
      '  }',
      '  return m',
      '}',
      `function $w${id}(w: ${RT}.BinaryWriter, v: ${data}): void {`,
      '  w.count(v.size)',
      '  for (const [key, x] of v) {',
      `    ${this.write(key, 'key')}`,
      `    ${this.write(t.value, 'x')}`,
      '  }',
      '}',
      `function $j${id}(j: unknown, e: ${RT}.FieldError[], p: string, k: string | number): ${cls} {`,
      `  const m = new Map<${keyTs}, ${valCls}>()`,
      `  if (!${RT}.isObject(j)) {`,
      `    ${RT}.fail(e, p, k, j === undefined ? 'is required' : j === null ? 'must not be null' : 'must be object')`,
      '    return m',
      '  }',
      `  const q = k === '' ? p : ${RT}.joinPath(p, k)`,
      '  for (const key of Object.keys(j)) {',
      `    m.set(${keyFromText}, ${this.fromJSON(t.value, 'j[key]', 'q', 'key')})`,
      '  }',
      '  return m',
      '}',
      `function $t${id}(v: ${data}): Record<string, unknown> {`,
      '  const o: Record<string, unknown> = Object.create(null)',
      `  for (const [key, x] of v) o[${t.key === 'string' ? 'key' : 'String(key)'}] = ${this.toJSON(t.value, 'x')}`,
      '  return o',
      '}',
      `function $e${id}(a: ${data}, b: ${data}): boolean {`,
      '  if (a.size !== b.size) return false',
      '  for (const [key, x] of a) {',
      '    if (!b.has(key)) return false',
      '    const y = b.get(key)!',
      `    if (!(${this.equals(t.value, 'x', 'y')})) return false`,
      '  }',
      '  return true',
      '}',
      `function $h${id}(v: ${data}): number {`,
      '  let h = 0',
      `  for (const [key, x] of v) h = (h + (${this.hash(key, 'key')} ^ ${this.hash(t.value, 'x')})) | 0`,
      '  return h',
      '}',
    ]
  }

  // ----- per-type expressions -----

  minSize(t: TypeNode): string {
    switch (t.kind) {
      case 'prim':
        return String(
          { string: 4, int32: 4, int64: 8, float32: 4, float64: 8, bool: 1, datetime: 8, bytes: 4 }[t.name],
        )
      case 'any':
      case 'nullable':
        return '1'
      case 'list':
      case 'map':
      case 'ref':
        return '4'
      case 'custom':
        return `(${t.name}.minSize ?? 1)`
    }
  }

  read(t: TypeNode): string {
    switch (t.kind) {
      case 'prim':
        return `r.${t.name}()`
      case 'any':
        return 'r.any()'
      case 'nullable':
        return `(r.presence() ? ${this.read(t.inner)} : null)`
      case 'list':
      case 'map':
        return `$r${this.helperId(t)}(r)`
      case 'ref':
        return `${t.model}.read(r)`
      case 'custom':
        return `${t.name}.read(r)`
    }
  }

  /** A statement writing `v` (an identifier or property access: it may be evaluated twice). */
  write(t: TypeNode, v: string): string {
    switch (t.kind) {
      case 'prim':
        return `w.${t.name}(${v})`
      case 'any':
        return `w.any(${v})`
      case 'nullable':
        return `if (${v} == null) w.presence(false)\n    else {\n      w.presence(true)\n      ${this.write(t.inner, v)}\n    }`
      case 'list':
      case 'map':
        return `$w${this.helperId(t)}(w, ${v})`
      case 'ref':
        return `${t.model}.write(w, ${v})`
      case 'custom':
        return `${t.name}.write(w, ${v})`
    }
  }

  fromJSON(t: TypeNode, j: string, p: string, k: string): string {
    switch (t.kind) {
      case 'prim': {
        const fn = {
          string: 'jString',
          int32: 'jInt32',
          int64: 'jInt64',
          float32: 'jFloat32',
          float64: 'jFloat64',
          bool: 'jBool',
          datetime: 'jDatetime',
          bytes: 'jBytes',
        }[t.name]
        return `${RT}.${fn}(${j}, e, ${p}, ${k})`
      }
      case 'any':
        return `${RT}.jAny(${j})`
      case 'nullable':
        return `(${j} == null ? null : ${this.fromJSON(t.inner, j, p, k)})`
      case 'list':
      case 'map':
        return `$j${this.helperId(t)}(${j}, e, ${p}, ${k})`
      case 'ref':
        return `${t.model}.fromJSONAt(${j}, e, ${p}, ${k})`
      case 'custom':
        return `${RT}.jCustom(${t.name}, ${j}, e, ${p}, ${k})`
    }
  }

  private isJsonIdentity(t: TypeNode): boolean {
    return t.kind === 'prim' && (t.name === 'string' || t.name === 'int32' || t.name === 'bool')
  }

  toJSON(t: TypeNode, v: string): string {
    switch (t.kind) {
      case 'prim':
        switch (t.name) {
          case 'string':
          case 'int32':
          case 'bool':
            return v
          case 'float32':
          case 'float64':
            return `${RT}.floatToJSON(${v})`
          case 'int64':
            return `String(${v})`
          case 'datetime':
            return `${v}.toISOString()`
          case 'bytes':
            return `${RT}.toBase64(${v})`
        }
        break
      case 'any':
        return `(${v} ?? null)`
      case 'nullable':
        return this.isJsonIdentity(t.inner)
          ? `(${v} ?? null)`
          : `(${v} == null ? null : ${this.toJSON(t.inner, v)})`
      case 'list':
      case 'map':
        return `$t${this.helperId(t)}(${v})`
      case 'ref':
        return `${t.model}.toJSON(${v})`
      case 'custom':
        return `${t.name}.toJSON(${v})`
    }
  }

  equals(t: TypeNode, a: string, b: string): string {
    switch (t.kind) {
      case 'prim':
        switch (t.name) {
          case 'float32':
          case 'float64':
            // SameValueZero: NaN equals NaN, 0 equals -0 (JSON cannot carry -0).
            return `(${a} === ${b} || (${a} !== ${a} && ${b} !== ${b}))`
          case 'datetime':
            return `${RT}.eqDate(${a}, ${b})`
          case 'bytes':
            return `${RT}.eqBytes(${a}, ${b})`
          default:
            return `${a} === ${b}`
        }
      case 'any':
        return `${RT}.eqAny(${a}, ${b})`
      case 'nullable':
        return `(${a} == null ? ${b} == null : ${b} != null && ${this.equals(t.inner, a, b)})`
      case 'list':
      case 'map':
        return `$e${this.helperId(t)}(${a}, ${b})`
      case 'ref':
        return `${t.model}.equalsValue(${a}, ${b})`
      case 'custom':
        return `${RT}.eqCustom(${t.name}, ${a}, ${b})`
    }
  }

  hash(t: TypeNode, v: string): string {
    switch (t.kind) {
      case 'prim':
        return {
          string: `${RT}.hashString(${v})`,
          int32: `(${v} | 0)`,
          int64: `${RT}.hashBigInt(${v})`,
          float32: `${RT}.hashNumber(${v})`,
          float64: `${RT}.hashNumber(${v})`,
          bool: `${RT}.hashBool(${v})`,
          datetime: `${RT}.hashDate(${v})`,
          bytes: `${RT}.hashBytes(${v})`,
        }[t.name]
      case 'any':
        return `${RT}.hashAny(${v})`
      case 'nullable':
        return `(${v} == null ? 0 : ${this.hash(t.inner, v)})`
      case 'list':
      case 'map':
        return `$h${this.helperId(t)}(${v})`
      case 'ref':
        return `${t.model}.hashValue(${v})`
      case 'custom':
        return `${RT}.hashCustom(${t.name}, ${v})`
    }
  }
}
