// The emitter's models file: one class per model (its data and init types, JSON, binary and value
// members), then the container helpers its fields used.
import { modelJsonSchema } from './emit-json-schema.js'
import { HEADER, isNullable, prop, q, RT } from './emit-shared.js'
import { TypeEmitter } from './emit-types.js'
import type { CustomTypeDef, FieldDef, ModelDef, SchemaDef, TypeNode } from './schema.js'

export class ModelEmitter {
  private readonly types = new TypeEmitter()

  constructor(private readonly schema: SchemaDef) {}

  // ----- one model -----

  model(m: ModelDef): string {
    const N = m.name
    const f = m.fields
    const out: string[] = []
    const fieldDoc = (fd: FieldDef) => `  /** \`${fd.expr}\` */`
    out.push(`/** Data of model ${N}: plain objects of this shape can be encoded and sent. */`)
    out.push(`export interface ${N}Data {`)
    for (const fd of f) {
      out.push(
        fieldDoc(fd),
        `  readonly ${fd.name}${isNullable(fd.type) ? '?' : ''}: ${this.types.ts(fd.type, 'data')}`,
      )
    }
    out.push('}', '')
    out.push(`/** Constructor argument of ${N}: nullable fields may be left out (null). */`)
    out.push(`export interface ${N}Init {`)
    for (const fd of f)
      out.push(`  ${fd.name}${isNullable(fd.type) ? '?' : ''}: ${this.types.ts(fd.type, 'class')}`)
    out.push('}', '')

    const schema = modelJsonSchema(this.schema, m)
    out.push(`export class ${N} implements ${N}Data {`)
    for (const fd of f) out.push(fieldDoc(fd), `  readonly ${fd.name}: ${this.types.ts(fd.type, 'class')}`)
    out.push('')
    out.push(`  /** JSON Schema of the JSON form. */`)
    out.push(
      `  static readonly jsonSchema: ${RT}.JsonSchema = ${JSON.stringify(schema, null, 2).replace(/\n/g, '\n  ')}`,
    )
    out.push('')
    out.push(`  constructor(init: ${N}Init) {`)
    for (const fd of f) {
      out.push(`    this.${fd.name} = init.${fd.name}${isNullable(fd.type) ? ' ?? null' : ''}`)
    }
    out.push('  }', '')

    this.modelJsonMembers(m, out)
    this.modelBinaryMembers(m, out)
    this.modelValueMembers(m, out)
    out.push('}')
    out.push(`Object.defineProperty(${N}, 'name', { value: ${q(N)} })`)
    return out.join('\n')
  }

  /** The model class's JSON members: fromJSON, fromJSONAt, toJSON. */
  private modelJsonMembers(m: ModelDef, out: string[]): void {
    const N = m.name
    const f = m.fields
    out.push(
      `  /** Checks and converts the JSON form; throws a ValidationException naming every bad field. */`,
    )
    out.push(`  static fromJSON(json: unknown): ${N} {`)
    out.push(`    const e: ${RT}.FieldError[] = []`)
    out.push(`    const v = ${N}.fromJSONAt(json, e, '', '')`)
    out.push(`    if (e.length > 0) throw ${RT}.validationError(${q(N)}, e)`)
    out.push('    return v', '  }', '')
    out.push(`  static fromJSONAt(j: unknown, e: ${RT}.FieldError[], p: string, k: string | number): ${N} {`)
    out.push(`    if (!${RT}.isObject(j)) {`)
    out.push(
      `      ${RT}.fail(e, p, k, j === undefined && p + k !== '' ? 'is required' : j === null && p + k !== '' ? 'must not be null' : 'must be object')`,
    )
    out.push(`      return undefined as unknown as ${N}`)
    out.push('    }')
    if (f.length > 0) out.push(`    const q = k === '' ? p : ${RT}.joinPath(p, k)`)
    out.push(`    return new ${N}({`)
    for (const fd of f)
      out.push(`      ${fd.name}: ${this.types.fromJSON(fd.type, prop('j', fd.name), 'q', q(fd.name))},`)
    out.push('    })', '  }', '')
    out.push(`  /** The JSON form (a null optional model reference is omitted). */`)
    out.push(`  static toJSON(v: ${N}Data): Record<string, unknown> {`)
    const omitted = f.filter((fd) => fd.type.kind === 'nullable' && fd.type.inner.kind === 'ref')
    const kept = f.filter((fd) => !omitted.includes(fd))
    out.push(`    const o: Record<string, unknown> = {`)
    for (const fd of kept) out.push(`      ${fd.name}: ${this.types.toJSON(fd.type, prop('v', fd.name))},`)
    out.push('    }')
    for (const fd of omitted) {
      const inner = (fd.type as { inner: TypeNode }).inner
      out.push(`    if (v.${fd.name} != null) o.${fd.name} = ${this.types.toJSON(inner, prop('v', fd.name))}`)
    }
    out.push('    return o', '  }', '')
  }

  /** The model class's binary members: write, read, encode, decode. */
  private modelBinaryMembers(m: ModelDef, out: string[]): void {
    const N = m.name
    const f = m.fields
    out.push(`  static write(w: ${RT}.BinaryWriter, v: ${N}Data): void {`)
    out.push('    const at = w.beginModel()')
    for (const fd of f) out.push(`    ${this.types.write(fd.type, prop('v', fd.name))}`)
    out.push('    w.endModel(at)', '  }', '')
    out.push(`  static read(r: ${RT}.BinaryReader): ${N} {`)
    out.push('    const outer = r.enterModel()')
    for (const fd of f) {
      // Fields a writer may not know yet (nullable ones, appended later) are null when the model ends early.
      const expr = isNullable(fd.type)
        ? `r.pos < r.end ? ${this.types.read(fd.type)} : null`
        : this.types.read(fd.type)
      out.push(`    const f$${fd.name} = ${expr}`)
    }
    out.push('    r.exitModel(outer)')
    out.push(`    return new ${N}({ ${f.map((fd) => `${fd.name}: f$${fd.name}`).join(', ')} })`)
    out.push('  }', '')
    out.push(`  /** Binary form: format version byte, then the model. */`)
    out.push(`  static encode(v: ${N}Data): Uint8Array {`)
    out.push(`    return ${RT}.encodeMessage(${N}.write, v)`)
    out.push('  }', '')
    out.push(`  /** Reads the binary form; bad bytes throw DecodeError. */`)
    out.push(`  static decode(bytes: Uint8Array, options?: ${RT}.ReaderOptions): ${N} {`)
    out.push(`    return ${RT}.decodeMessage(${N}.read, bytes, options)`)
    out.push('  }', '')
  }

  /** The model class's value members: equality, hash, copyWith, toJSON. */
  private modelValueMembers(m: ModelDef, out: string[]): void {
    const N = m.name
    const f = m.fields
    out.push(`  static equalsValue(a: ${N}Data, b: ${N}Data): boolean {`)
    if (f.length === 0) out.push('    return a != null && b != null')
    else {
      out.push(`    return (`)
      out.push(
        f
          .map((fd) => `      ${this.types.equals(fd.type, prop('a', fd.name), prop('b', fd.name))}`)
          .join(' &&\n'),
      )
      out.push('    )')
    }
    out.push('  }', '')
    out.push(`  static hashValue(v: ${N}Data): number {`)
    out.push(`    let h = ${RT}.hashString(${q(N)})`)
    for (const fd of f)
      out.push(`    h = ${RT}.hashCombine(h, ${this.types.hash(fd.type, prop('v', fd.name))})`)
    out.push('    return h', '  }', '')
    out.push(`  /** Value equality: same model and equal fields. */`)
    out.push('  equals(other: unknown): boolean {')
    out.push(`    return other === this || (other instanceof ${N} && ${N}.equalsValue(this, other))`)
    out.push('  }', '')
    out.push('  hashCode(): number {')
    out.push(`    return ${N}.hashValue(this)`)
    out.push('  }', '')
    out.push(
      `  /** A copy with some fields replaced (\`undefined\` keeps a field; \`null\` clears a nullable one). */`,
    )
    out.push(`  copyWith(patch: Partial<${N}Init>): ${N} {`)
    out.push(`    return new ${N}({`)
    for (const fd of f) {
      out.push(`      ${fd.name}: patch.${fd.name} === undefined ? this.${fd.name} : patch.${fd.name},`)
    }
    out.push('    })', '  }', '')
    out.push('  toJSON(): Record<string, unknown> {')
    out.push(`    return ${N}.toJSON(this)`)
    out.push('  }')
  }

  // ----- files -----

  modelsFile(runtimeImport: string, types: CustomTypeDef[]): string {
    const bodies = this.schema.models.map((m) => this.model(m))
    const lines = [HEADER, `import * as ${RT} from ${q(runtimeImport)}`]
    for (const t of types) {
      lines.push(`import { ${t.export === t.name ? t.name : `${t.export} as ${t.name}`} } from ${q(t.from)}`)
    }
    lines.push('', ...bodies.flatMap((b) => [b, '']))
    if (this.types.helpers.length > 0)
      lines.push(
        '// ---------- container helpers ----------',
        '',
        ...this.types.helpers.flatMap((h) => [h, '']),
      )
    return `${lines.join('\n').trimEnd()}\n`
  }
}
