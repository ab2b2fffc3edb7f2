// Model JSON Schemas → `components.schemas`. A model's schema may be self-contained (the generator of
// @trivium/codec puts referenced models in `definitions`, refers to them as `#/definitions/X` and to
// itself as `#`): every definition is hoisted to a component of its own and every `$ref` rewritten so
// it still resolves inside the OpenAPI document. Equal schemas under one name are stored once; a
// different schema under a name already taken gets `Name_2`, `Name_3`, ….
import { anyModel, type JsonSchema, type Model } from '@trivium/core'

export type Schema = Record<string, unknown>

export const COMPONENT_PREFIX = '#/components/schemas/'

/** Keywords whose values are data, not schemas: their `$ref`-looking keys are left alone. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example'])
const DEFINITION_KEYWORDS = ['definitions', '$defs'] as const

/** A component key must match `^[a-zA-Z0-9.\-_]+$` (OpenAPI 3.1 "Components Object"). */
export function componentName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '_')
  return cleaned.length > 0 ? cleaned : 'Model'
}

function isObject(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** JSON with object keys sorted, so that equal schemas compare equal whatever their key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (isObject(value)) {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Equal, ignoring a top-level `title` that only repeats the component name. */
function sameSchema(a: Schema, b: Schema, name: string): boolean {
  const strip = (s: Schema): Schema => {
    if (s.title !== name) return s
    const { title: _title, ...rest } = s
    return rest
  }
  return canonical(strip(a)) === canonical(strip(b))
}

function decodePointerToken(token: string): string {
  return decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~')
}

function encodePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}

/** Deep copy of `schema` with every `$ref` string passed through `map`. */
function rewriteRefs(schema: unknown, map: (ref: string) => string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => rewriteRefs(item, map))
  if (!isObject(schema)) return schema
  const out: Schema = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string') out[key] = map(value)
    else if (DATA_KEYWORDS.has(key)) out[key] = structuredClone(value)
    else out[key] = rewriteRefs(value, map)
  }
  return out
}

export interface RegisteredModel {
  /** `{ $ref: '#/components/schemas/Name' }`, or `{}` for the any-model. */
  readonly ref: Schema
  /** The component's schema (refs rewritten), for deriving parameters; `{}` for the any-model. */
  readonly schema: Schema
  /** Component name, undefined for the any-model. */
  readonly component: string | undefined
}

/** Collects model schemas as OpenAPI components. */
export class SchemaComponents {
  readonly schemas: Record<string, Schema> = {}
  private readonly byModel = new Map<Model, RegisteredModel>()

  constructor(initial: Record<string, Schema> = {}) {
    Object.assign(this.schemas, initial)
  }

  /** Adds a model (once per model object) and returns how to refer to it. */
  add(model: Model): RegisteredModel {
    const known = this.byModel.get(model)
    if (known) return known
    let registered: RegisteredModel
    if (model === anyModel) registered = { ref: {}, schema: {}, component: undefined }
    else {
      const component = this.addSchema(model.name, model.jsonSchema)
      const schema = this.schemas[component] as Schema
      registered = { ref: { $ref: COMPONENT_PREFIX + component }, schema, component }
    }
    this.byModel.set(model, registered)
    return registered
  }

  /** Hoists a (possibly self-contained) JSON Schema and its definitions; returns the component name. */
  addSchema(name: string, jsonSchema: JsonSchema | undefined): string {
    const root: Schema = isObject(jsonSchema) ? { ...jsonSchema } : {}
    // `$id` would change the base the rewritten refs resolve against; `$schema` is the document's.
    delete root.$id
    delete root.$schema
    const SELF = '\u0000self'
    // entries: the model itself, then each definition (an alias when it is `{ $ref: '#' }`)
    const entries = new Map<string, Schema>()
    const aliases = new Map<string, string>() // `keyword/name` → entry key
    const defKey = (keyword: string, def: string) => `${keyword}/${def}`
    for (const keyword of DEFINITION_KEYWORDS) {
      const defs = root[keyword]
      if (!isObject(defs)) continue
      delete root[keyword]
      for (const [def, defSchema] of Object.entries(defs)) {
        const key = defKey(keyword, def)
        if (isObject(defSchema) && defSchema.$ref === '#' && Object.keys(defSchema).length === 1) {
          aliases.set(key, SELF)
        } else {
          const copy: Schema = isObject(defSchema) ? { ...defSchema } : {}
          delete copy.$id
          delete copy.$schema
          entries.set(key, copy)
        }
      }
    }
    entries.set(SELF, root)
    const wanted = (key: string) => (key === SELF ? name : key.slice(key.indexOf('/') + 1))

    // Tentative names; a name whose component exists with another schema is replaced by a fresh one,
    // which changes the refs of the others, so repeat until every entry fits (fresh names never clash).
    const names = new Map<string, string>()
    for (const key of entries.keys()) names.set(key, componentName(wanted(key)))
    const taken = new Set(Object.keys(this.schemas))
    let rewritten = new Map<string, Schema>()
    for (;;) {
      const mapRef = (ref: string): string => {
        if (ref === '#') return COMPONENT_PREFIX + names.get(SELF)
        if (!ref.startsWith('#/')) return ref // external: left as is
        const tokens = ref.slice(2).split('/')
        const [keyword, token] = tokens
        if (keyword !== undefined && token !== undefined && DEFINITION_KEYWORDS.some((k) => k === keyword)) {
          const key = defKey(keyword, decodePointerToken(token))
          const target = aliases.get(key) ?? (entries.has(key) ? key : undefined)
          if (target !== undefined) {
            const rest = tokens.slice(2)
            return (
              COMPONENT_PREFIX +
              encodePointerToken(names.get(target) as string) +
              rest.map((t) => `/${t}`).join('')
            )
          }
        }
        // a pointer into the model's own schema
        return `${COMPONENT_PREFIX}${encodePointerToken(names.get(SELF) as string)}/${tokens.join('/')}`
      }
      rewritten = new Map([...entries].map(([key, schema]) => [key, rewriteRefs(schema, mapRef) as Schema]))
      let clash = false
      for (const [key, schema] of rewritten) {
        const current = names.get(key) as string
        const existing = this.schemas[current]
        const claimedByOther = [...names].some(([k, n]) => k !== key && n === current)
        if ((existing !== undefined && !sameSchema(existing, schema, current)) || claimedByOther) {
          names.set(key, this.freshName(wanted(key), taken, names))
          clash = true
          break
        }
      }
      if (!clash) break
    }
    for (const [key, schema] of rewritten) {
      const component = names.get(key) as string
      if (this.schemas[component] === undefined) this.schemas[component] = schema
    }
    return names.get(SELF) as string
  }

  private freshName(base: string, taken: Set<string>, names: Map<string, string>): string {
    const stem = componentName(base)
    const used = new Set([...taken, ...names.values()])
    for (let i = 2; ; i++) {
      const candidate = `${stem}_${i}`
      if (!used.has(candidate)) return candidate
    }
  }
}
