// The emitter's JSON Schemas: each model's self-contained schema of its JSON form (the class's static
// `jsonSchema` and `schemas/<Model>.json`).
import type { JsonSchema } from '../runtime/types.js'
import { isNullable } from './emit-shared.js'
import type { FieldRules, ModelDef, SchemaDef, TypeNode } from './schema.js'

/** The JSON Schema of one type's JSON form (`refPrefix` + model name for a reference). */
export function jsonSchema(t: TypeNode, refPrefix: string): JsonSchema {
  switch (t.kind) {
    case 'prim':
      switch (t.name) {
        case 'string':
          return { type: 'string' }
        case 'int32':
          return { type: 'integer', minimum: -2147483648, maximum: 2147483647 }
        case 'int64':
          return { type: ['string', 'integer'], pattern: '^-?(0|[1-9][0-9]{0,18})$', format: 'int64' }
        case 'float32':
        case 'float64':
          return {
            type: ['number', 'string'],
            pattern: '^(NaN|-?Infinity)$',
            format: t.name === 'float32' ? 'float' : 'double',
          }
        case 'bool':
          return { type: 'boolean' }
        case 'datetime':
          return { type: 'string', format: 'date-time' }
        case 'bytes':
          return { type: 'string', contentEncoding: 'base64' }
      }
      break
    case 'any':
      return {}
    case 'nullable': {
      const inner = jsonSchema(t.inner, refPrefix)
      if (inner.type !== undefined) {
        const types = Array.isArray(inner.type) ? inner.type : [inner.type]
        return { ...inner, type: [...types, 'null'] }
      }
      return { anyOf: [inner, { type: 'null' }] }
    }
    case 'list':
      return { type: 'array', items: jsonSchema(t.item, refPrefix) }
    case 'map': {
      const s: JsonSchema = { type: 'object', additionalProperties: jsonSchema(t.value, refPrefix) }
      if (t.key !== 'string') s.propertyNames = { pattern: '^-?(0|[1-9][0-9]*)$' }
      return s
    }
    case 'ref':
      return { $ref: `${refPrefix}${t.model}` }
    case 'custom':
      // Resolved at run time from the custom type; the static schema says nothing.
      return { description: `custom type ${t.name}` }
  }
}

function objectSchema(m: ModelDef, refPrefix: string): JsonSchema {
  const properties: Record<string, JsonSchema> = {}
  const required: string[] = []
  for (const fd of m.fields) {
    properties[fd.name] = withRules(jsonSchema(fd.type, refPrefix), fd.rules)
    if (!isNullable(fd.type)) required.push(fd.name)
  }
  const s: JsonSchema = { type: 'object', properties }
  if (required.length > 0) s.required = required
  return s
}

/** Self-contained schema of one model: referenced models go in `definitions`. */
export function modelJsonSchema(schema: SchemaDef, m: ModelDef): JsonSchema {
  const byName = new Map(schema.models.map((x) => [x.name, x]))
  // References were resolved when the schema was checked; a miss here is a generator bug.
  const model = (name: string): ModelDef => {
    const found = byName.get(name)
    if (found === undefined) throw new Error(`trivium-codegen: model ${name} is referenced but not defined`)
    return found
  }
  const seen = new Set<string>()
  const visit = (t: TypeNode): void => {
    if (t.kind === 'ref') {
      if (seen.has(t.model)) return
      seen.add(t.model)
      for (const fd of model(t.model).fields) visit(fd.type)
    } else if (t.kind === 'nullable') visit(t.inner)
    else if (t.kind === 'list') visit(t.item)
    else if (t.kind === 'map') visit(t.value)
  }
  for (const fd of m.fields) visit(fd.type)
  const s: JsonSchema = { title: m.name, ...objectSchema(m, '#/definitions/') }
  if (seen.size > 0) {
    const defs: Record<string, JsonSchema> = {}
    for (const name of [...seen].sort()) {
      defs[name] =
        name === m.name ? { $ref: '#' } : { title: name, ...objectSchema(model(name), '#/definitions/') }
    }
    s.definitions = defs
  }
  return s
}

/** A field's schema with its declared rules (`items` rules go into the list's `items`). */
function withRules(schema: JsonSchema, rules: FieldRules | undefined): JsonSchema {
  if (!rules) return schema
  const { items, ...own } = rules
  const out: JsonSchema = { ...schema, ...own }
  if (items) out.items = withRules((schema.items ?? {}) as JsonSchema, items)
  return out
}
