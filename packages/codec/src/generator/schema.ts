// Reads and checks a model schema: the JSON text (with duplicate keys detected, which JSON.parse
// hides), the type expressions, names, custom types and the optional `endpoints` section. Every
// problem names its model (or endpoint) and field and says why; nothing here throws a raw error.

export type Primitive = 'string' | 'int32' | 'int64' | 'float32' | 'float64' | 'bool' | 'datetime' | 'bytes'
export const PRIMITIVES: readonly Primitive[] = [
  'string',
  'int32',
  'int64',
  'float32',
  'float64',
  'bool',
  'datetime',
  'bytes',
]
export type MapKey = 'string' | 'int32' | 'int64'
export const MAP_KEYS: readonly MapKey[] = ['string', 'int32', 'int64']

export type TypeNode =
  | { kind: 'prim'; name: Primitive }
  | { kind: 'any' }
  | { kind: 'nullable'; inner: TypeNode }
  | { kind: 'list'; item: TypeNode }
  | { kind: 'map'; key: MapKey; value: TypeNode }
  | { kind: 'ref'; model: string }
  | { kind: 'custom'; name: string }

export interface FieldDef {
  name: string
  expr: string
  type: TypeNode
  /** JSON Schema keywords declared with the field (documentation; see `FieldRules`). */
  rules?: FieldRules
}

/**
 * What a service checks on a field, declared beside its type so the JSON Schema and the OpenAPI
 * document say it: `{ "type": "string", "minLength": 1, "maxLength": 200 }`. The generated decoders do
 * not enforce them (the service's validators do, with their own messages).
 */
export interface FieldRules {
  description?: string
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  minItems?: number
  maxItems?: number
  /** Rules of each item of a list. */
  items?: FieldRules
  /** OpenAPI specification extensions, copied as they are (`"x-max-utf8-bytes": 72`). */
  [extension: `x-${string}`]: unknown
}

const STRING_RULES = ['minLength', 'maxLength', 'pattern', 'format']
const NUMBER_RULES = ['minimum', 'maximum']
const LIST_RULES = ['minItems', 'maxItems', 'items']

/** Problems of the rules of a field of type `t` (unknown keyword, wrong type, bad value). */
function ruleProblems(raw: Record<string, unknown>, t: TypeNode, where: string): string[] {
  const problems: string[] = []
  const base = t.kind === 'nullable' ? t.inner : t
  const allowed =
    base.kind === 'list'
      ? LIST_RULES
      : base.kind === 'prim' && base.name === 'string'
        ? STRING_RULES
        : base.kind === 'prim' && ['int32', 'int64', 'float32', 'float64'].includes(base.name)
          ? NUMBER_RULES
          : base.kind === 'prim' && base.name === 'bytes'
            ? ['minLength', 'maxLength']
            : []
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'type' && where === '') continue
    if (key === 'description') {
      if (typeof value !== 'string') problems.push(`${where}description must be a string`)
      continue
    }
    // OpenAPI specification extensions (`x-…`) say what JSON Schema cannot (a limit in UTF-8 bytes).
    if (key.startsWith('x-')) continue
    if (!allowed.includes(key)) {
      problems.push(`${where}rule "${key}" does not apply to this type`)
      continue
    }
    if (key === 'items') {
      if (!isPlainObject(value) || base.kind !== 'list')
        problems.push(`${where}items must be an object of rules`)
      else problems.push(...ruleProblems(value, base.item, `${where}items.`))
    } else if (key === 'pattern' || key === 'format') {
      if (typeof value !== 'string' || value === '')
        problems.push(`${where}${key} must be a non-empty string`)
      else if (key === 'pattern') {
        try {
          new RegExp(value, 'u')
        } catch {
          problems.push(`${where}pattern is not a valid regular expression`)
        }
      }
    } else if (key === 'minimum' || key === 'maximum') {
      if (typeof value !== 'number' || !Number.isFinite(value))
        problems.push(`${where}${key} must be a number`)
    } else if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
      problems.push(`${where}${key} must be a non-negative integer`)
    }
  }
  return problems
}

export interface ModelDef {
  name: string
  fields: FieldDef[]
}

export interface CustomTypeDef {
  name: string
  /** Module specifier, relative to the generated files (e.g. `../money.js`) or a package name. */
  from: string
  /** Exported binding (default: the type name). */
  export: string
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

export interface EndpointDef {
  name: string
  request: string
  response: string
  streaming: boolean
  /** Takes a stream of requests (a client stream; bidirectional with `streaming`). */
  requestStream: boolean
  method: HttpMethod
  url: string
  status: number
  /** Pass-through settings (auth, permissions, roles, rateLimit, summary, ...). */
  config: Record<string, unknown>
}

export interface SchemaDef {
  models: ModelDef[]
  types: CustomTypeDef[]
  endpoints: EndpointDef[]
}

export interface SchemaProblem {
  model?: string
  field?: string
  endpoint?: string
  reason: string
}

function describeProblem(p: SchemaProblem): string {
  const where: string[] = []
  if (p.model !== undefined) where.push(`model "${p.model}"`)
  if (p.endpoint !== undefined) where.push(`endpoint "${p.endpoint}"`)
  if (p.field !== undefined) where.push(`field "${p.field}"`)
  return where.length > 0 ? `${where.join(', ')}: ${p.reason}` : p.reason
}

/** A schema that cannot be generated. `problems` lists every problem found; the message shows them all. */
export class SchemaError extends Error {
  readonly code = 'TRV_SCHEMA'
  readonly problems: SchemaProblem[]
  constructor(problems: SchemaProblem[]) {
    super(problems.map(describeProblem).join('\n'))
    this.name = 'SchemaError'
    this.problems = problems
  }
}

// ---------- JSON text with duplicate-key detection ----------

/** Paths of keys that occur twice in one object of (valid) JSON text. */
function duplicateKeys(text: string): { path: string[]; key: string }[] {
  const found: { path: string[]; key: string }[] = []
  let i = 0
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'))
      i++
  }
  const str = (): string => {
    const start = i++
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  const value = (path: string[]): void => {
    ws()
    const c = text[i]
    if (c === '{') {
      i++
      const seen = new Set<string>()
      ws()
      if (text[i] === '}') {
        i++
        return
      }
      for (;;) {
        ws()
        const key = str()
        if (seen.has(key)) found.push({ path, key })
        seen.add(key)
        ws()
        i++ // ':'
        value([...path, key])
        ws()
        if (text[i++] === ',') continue
        return
      }
    } else if (c === '[') {
      i++
      ws()
      if (text[i] === ']') {
        i++
        return
      }
      for (let n = 0; ; n++) {
        value([...path, String(n)])
        ws()
        if (text[i++] === ',') continue
        return
      }
    } else if (c === '"') {
      str()
    } else {
      while (i < text.length && !',]} \t\n\r'.includes(text.charAt(i))) i++
    }
  }
  value([])
  return found
}

/** Parses schema JSON text; syntax errors and duplicate keys are SchemaErrors. */
export function parseSchemaText(text: string): unknown {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new SchemaError([{ reason: `schema is not valid JSON: ${(err as Error).message}` }])
  }
  const problems: SchemaProblem[] = []
  for (const { path, key } of duplicateKeys(text)) {
    const model = path[1]
    if (path.length === 0) problems.push({ reason: `duplicate top-level key "${key}"` })
    else if (path[0] === 'models' && path.length === 1)
      problems.push({ model: key, reason: 'duplicate model' })
    else if (path[0] === 'models' && path.length === 2 && model !== undefined)
      problems.push({ model, field: key, reason: 'duplicate field' })
    else if (path[0] === 'endpoints' && path.length === 1)
      problems.push({ endpoint: key, reason: 'duplicate endpoint' })
    else problems.push({ reason: `duplicate key "${key}" in ${path.join('.')}` })
  }
  if (problems.length > 0) throw new SchemaError(problems)
  return json
}

// ---------- type expressions ----------

class ExprError extends Error {}

/**
 * Parses a type expression: `string`, `int32?`, `[T]`, `map<K, V>`, `@Model`, `@Model?`, `CustomType`,
 * nested freely. `isModel` / `isCustom` resolve names.
 */
export function parseTypeExpression(
  expr: string,
  isModel: (name: string) => boolean,
  isCustom: (name: string) => boolean,
): TypeNode {
  let i = 0
  const ws = () => {
    while (i < expr.length && /\s/.test(expr.charAt(i))) i++
  }
  const ident = (): string => {
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(expr.slice(i))
    if (!m) throw new ExprError(`expected a type at position ${i}`)
    i += m[0].length
    return m[0]
  }
  const expect = (c: string) => {
    ws()
    if (expr[i] !== c) {
      throw new ExprError(`expected "${c}" at position ${i}${i < expr.length ? `, found "${expr[i]}"` : ''}`)
    }
    i++
  }
  const type = (): TypeNode => {
    ws()
    let node: TypeNode
    if (expr[i] === '[') {
      i++
      node = { kind: 'list', item: type() }
      expect(']')
    } else if (expr[i] === '@') {
      i++
      const name = ident()
      if (!isModel(name)) throw new ExprError(`unknown model reference "@${name}"`)
      node = { kind: 'ref', model: name }
    } else {
      const name = ident()
      if (name === 'map') {
        expect('<')
        ws()
        const keyAt = i
        const key = type()
        if (key.kind !== 'prim' || !oneOf(MAP_KEYS, key.name)) {
          throw new ExprError(
            `map key type must be one of ${MAP_KEYS.join(', ')}, got "${expr.slice(keyAt, i).trim()}"`,
          )
        }
        expect(',')
        const value = type()
        expect('>')
        node = { kind: 'map', key: key.name, value }
      } else if (name === 'any') {
        node = { kind: 'any' }
      } else if (oneOf(PRIMITIVES, name)) {
        node = { kind: 'prim', name }
      } else if (isCustom(name)) {
        node = { kind: 'custom', name }
      } else if (isModel(name)) {
        throw new ExprError(`unknown type "${name}" (a model reference is written "@${name}")`)
      } else {
        throw new ExprError(`unknown type "${name}"`)
      }
    }
    ws()
    if (expr[i] === '?') {
      i++
      ws()
      if (expr[i] === '?') throw new ExprError(`"??" at position ${i - 1}: a type is nullable once`)
      // `any` already includes null.
      if (node.kind !== 'any') node = { kind: 'nullable', inner: node }
    }
    return node
  }
  if (typeof expr !== 'string') throw new ExprError('type expression must be a string')
  const node = type()
  ws()
  if (i < expr.length) throw new ExprError(`unexpected "${expr[i]}" at position ${i}`)
  return node
}

/** Canonical text of a type (used for helper names and messages). */
export function typeKey(t: TypeNode): string {
  switch (t.kind) {
    case 'prim':
      return t.name
    case 'any':
      return 'any'
    case 'nullable':
      return `${typeKey(t.inner)}?`
    case 'list':
      return `[${typeKey(t.item)}]`
    case 'map':
      return `map<${t.key}, ${typeKey(t.value)}>`
    case 'ref':
      return `@${t.model}`
    case 'custom':
      return t.name
  }
}

// ---------- names ----------

const MODEL_NAME = /^[A-Za-z][A-Za-z0-9_]*$/
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const JS_RESERVED = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally ' +
    'for function if import in instanceof new null return super switch this throw true try typeof var void ' +
    'while with yield let static implements interface package private protected public await undefined NaN Infinity'
  ).split(' '),
)
/** Globals and TypeScript types generated code refers to: a model of that name would shadow them. */
const RESERVED_MODEL_NAMES = new Set(
  (
    'Array Object Map Set Date Math Number String Boolean BigInt Symbol JSON Error TypeError Promise Function ' +
    'Uint8Array DataView ArrayBuffer Record Partial Readonly ReadonlyMap ReadonlyArray AsyncIterable Iterable ' +
    'PromiseLike any unknown never string number boolean bigint object map'
  ).split(' '),
)
/** Instance members of a generated class, and Object.prototype members read by fromJSON. */
const RESERVED_FIELD_NAMES = new Set(
  (
    'constructor prototype __proto__ toString toLocaleString valueOf hasOwnProperty isPrototypeOf ' +
    'propertyIsEnumerable equals hashCode copyWith toJSON'
  ).split(' '),
)
export const ENDPOINT_NAME = /^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)*$/
const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE']

/** `v` is one of `list`'s values (a type guard, where `list.includes(v)` would not narrow). */
function oneOf<T extends string>(list: readonly T[], v: unknown): v is T {
  return list.some((x) => x === v)
}

function isInteger(v: unknown): v is number {
  return Number.isInteger(v)
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

// ---------- the whole schema ----------

/** The custom types (`types`), each checked; every problem goes to `problems`. */
function checkTypes(
  rawTypes: unknown,
  rawModels: Record<string, unknown>,
  problems: SchemaProblem[],
): CustomTypeDef[] {
  const types: CustomTypeDef[] = []
  if (!isPlainObject(rawTypes)) problems.push({ reason: '"types" must be an object' })
  else {
    for (const [name, def] of Object.entries(rawTypes)) {
      if (!MODEL_NAME.test(name) || JS_RESERVED.has(name) || RESERVED_MODEL_NAMES.has(name)) {
        problems.push({
          reason: `custom type "${name}": invalid name (letters, digits and _, starting with a letter; not a reserved word)`,
        })
      } else if (oneOf(PRIMITIVES, name)) {
        problems.push({ reason: `custom type "${name}": a primitive type cannot be redefined` })
      } else if (Object.hasOwn(rawModels, name)) {
        problems.push({ reason: `custom type "${name}": a model has the same name` })
      } else if (!isPlainObject(def) || typeof def.import !== 'string' || def.import === '') {
        problems.push({ reason: `custom type "${name}": needs { "import": "<module specifier>" }` })
      } else if (
        def.export !== undefined &&
        (typeof def.export !== 'string' || !MODEL_NAME.test(def.export))
      ) {
        problems.push({ reason: `custom type "${name}": "export" must be an identifier` })
      } else {
        types.push({ name, from: def.import, export: def.export ?? name })
      }
    }
  }
  return types
}

/** One field of model `name`: its name, type expression and rules; undefined (with its problems) when bad. */
function checkField(
  name: string,
  field: string,
  expr: unknown,
  modelNames: Set<string>,
  customNames: Set<string>,
  problems: SchemaProblem[],
): FieldDef | undefined {
  if (!FIELD_NAME.test(field)) {
    problems.push({
      model: name,
      field,
      reason: 'invalid field name: use letters, digits and _, not starting with a digit',
    })
    return undefined
  }
  if (RESERVED_FIELD_NAMES.has(field)) {
    problems.push({ model: name, field, reason: `invalid field name: "${field}" is reserved` })
    return undefined
  }
  const spec = isPlainObject(expr) ? expr : undefined
  const text = spec ? spec.type : expr
  if (typeof text !== 'string') {
    problems.push({
      model: name,
      field,
      reason: 'type expression must be a string (or { "type": "<expression>", …rules })',
    })
    return undefined
  }
  try {
    const type = parseTypeExpression(
      text,
      (m) => modelNames.has(m),
      (c) => customNames.has(c),
    )
    if (spec) {
      const bad = ruleProblems(spec, type, '')
      for (const reason of bad) problems.push({ model: name, field, reason })
      if (bad.length > 0) return undefined
      const { type: _type, ...rules } = spec
      return { name: field, expr: text, type, rules: rules as FieldRules }
    }
    return { name: field, expr: text, type }
  } catch (err) {
    if (!(err instanceof ExprError)) throw err
    const reason =
      err.message.startsWith('unknown') || err.message.startsWith('map key')
        ? err.message
        : `malformed type expression "${text}": ${err.message}`
    problems.push({ model: name, field, reason })
    return undefined
  }
}

/** The models, each field checked; every problem goes to `problems`. */
function checkModels(
  rawModels: Record<string, unknown>,
  customNames: Set<string>,
  problems: SchemaProblem[],
): ModelDef[] {
  const modelNames = new Set(Object.keys(rawModels))
  const models: ModelDef[] = []
  for (const [name, rawFields] of Object.entries(rawModels)) {
    if (!MODEL_NAME.test(name)) {
      problems.push({
        model: name,
        reason: 'invalid model name: use letters, digits and _, starting with a letter',
      })
      continue
    }
    if (JS_RESERVED.has(name) || RESERVED_MODEL_NAMES.has(name)) {
      problems.push({ model: name, reason: `invalid model name: "${name}" is reserved` })
      continue
    }
    for (const suffix of ['Data', 'Init']) {
      if (name.endsWith(suffix) && modelNames.has(name.slice(0, -suffix.length))) {
        problems.push({
          model: name,
          reason: `invalid model name: clashes with the generated type ${name} of model "${name.slice(0, -suffix.length)}"`,
        })
      }
    }
    if (!isPlainObject(rawFields)) {
      problems.push({
        model: name,
        reason: 'a model must be an object mapping field names to type expressions',
      })
      continue
    }
    const fields: FieldDef[] = []
    for (const [field, expr] of Object.entries(rawFields)) {
      const def = checkField(name, field, expr, modelNames, customNames, problems)
      if (def) fields.push(def)
    }
    models.push({ name, fields })
  }
  return models
}

/** An endpoint's settings (auth, permissions, roles, rateLimit, summary, timeoutMs, custom ones). */
function endpointConfig(
  raw: Record<string, unknown>,
  bad: (reason: string) => void,
): Record<string, unknown> {
  const config: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(raw)) {
    if (['request', 'response', 'streaming', 'requestStream', 'http'].includes(key)) continue
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      bad(`invalid setting name "${key}"`)
      continue
    }
    if (key === 'auth' && !oneOf(['public', 'optional', 'required'], v)) {
      bad('"auth" must be "public", "optional" or "required"')
    } else if (
      (key === 'permissions' || key === 'roles') &&
      !(Array.isArray(v) && v.every((x) => typeof x === 'string'))
    ) {
      bad(`"${key}" must be a list of strings`)
    } else if (
      key === 'rateLimit' &&
      v !== false &&
      !(
        isPlainObject(v) &&
        isInteger(v.requests) &&
        v.requests > 0 &&
        isInteger(v.windowMs) &&
        v.windowMs > 0 &&
        Object.keys(v).every((k) => k === 'requests' || k === 'windowMs')
      )
    ) {
      bad(
        '"rateLimit" must be { "requests": <positive integer>, "windowMs": <positive integer> } or false (not limited)',
      )
    } else if (key === 'summary' && typeof v !== 'string') {
      bad('"summary" must be a string')
    } else if (key === 'timeoutMs' && !(isInteger(v) && v > 0)) {
      bad('"timeoutMs" must be a positive integer')
    } else config[key] = v
  }
  return config
}

/** One endpoint; undefined (with its problems) when bad. `names` are every endpoint's, for namespace clashes. */
function checkEndpoint(
  name: string,
  raw: unknown,
  names: string[],
  modelNames: Set<string>,
  problems: SchemaProblem[],
): EndpointDef | undefined {
  const bad = (reason: string) => problems.push({ endpoint: name, reason })
  if (!ENDPOINT_NAME.test(name)) {
    bad(
      'invalid endpoint name: dot-separated segments of letters, digits, "_" and "-", each starting with a letter',
    )
    return undefined
  }
  const clash = names.find((other) => other.startsWith(`${name}.`))
  if (clash) bad(`name is also the namespace of "${clash}" (the typed client cannot have both)`)
  if (!isPlainObject(raw)) {
    bad('must be an object with request, response and http')
    return undefined
  }
  const modelRef = (key: 'request' | 'response'): string | undefined => {
    const v = raw[key]
    if (typeof v !== 'string') {
      bad(`"${key}" must name a model ("@Model" or "Model")`)
      return undefined
    }
    const m = v.startsWith('@') ? v.slice(1) : v
    if (!modelNames.has(m)) {
      bad(`"${key}": unknown model "${m}"`)
      return undefined
    }
    return m
  }
  const request = modelRef('request')
  const response = modelRef('response')
  const streaming = raw.streaming ?? false
  if (typeof streaming !== 'boolean') bad('"streaming" must be a boolean')
  const requestStream = raw.requestStream ?? false
  if (typeof requestStream !== 'boolean') bad('"requestStream" must be a boolean')
  const http = raw.http
  let method: HttpMethod = 'POST'
  let url = ''
  let status = 200
  if (!isPlainObject(http)) bad('"http" must be an object { method, url, status? }')
  else {
    if (!oneOf(HTTP_METHODS, http.method)) bad(`"http.method" must be one of ${HTTP_METHODS.join(', ')}`)
    else method = http.method
    if (typeof http.url !== 'string' || !http.url.startsWith('/'))
      bad('"http.url" must be a path starting with "/"')
    else url = http.url
    if (http.status !== undefined) {
      if (!isInteger(http.status) || http.status < 200 || http.status > 299) {
        bad('"http.status" must be a 2xx code')
      } else status = http.status
    }
    for (const key of Object.keys(http)) {
      if (!['method', 'url', 'status'].includes(key)) bad(`unknown key "http.${key}"`)
    }
  }
  if (streaming === true && method !== 'GET' && method !== 'POST')
    bad('a streaming endpoint must use GET or POST')
  if (requestStream === true && method !== 'POST') bad('an endpoint with "requestStream" must use POST')
  const config = endpointConfig(raw, bad)
  if (!request || !response) return undefined
  return {
    name,
    request,
    response,
    streaming: streaming === true,
    requestStream: requestStream === true,
    method,
    url,
    status,
    config,
  }
}

/** Checks a parsed schema and returns its definitions. Throws SchemaError listing every problem. */
export function checkSchema(input: unknown): SchemaDef {
  const problems: SchemaProblem[] = []
  if (!isPlainObject(input))
    throw new SchemaError([{ reason: 'schema must be a JSON object with a "models" object' }])
  for (const key of Object.keys(input)) {
    if (!['models', 'types', 'endpoints', '$schema', 'description'].includes(key)) {
      problems.push({ reason: `unknown top-level key "${key}" (expected models, types, endpoints)` })
    }
  }
  const rawModels = input.models
  if (!isPlainObject(rawModels)) {
    problems.push({ reason: 'schema must have a "models" object' })
    throw new SchemaError(problems)
  }
  const types = checkTypes(input.types ?? {}, rawModels, problems)
  const customNames = new Set(types.map((t) => t.name))
  const modelNames = new Set(Object.keys(rawModels))
  const models = checkModels(rawModels, customNames, problems)

  const endpoints: EndpointDef[] = []
  const rawEndpoints = input.endpoints ?? {}
  if (!isPlainObject(rawEndpoints)) problems.push({ reason: '"endpoints" must be an object' })
  else {
    const names = Object.keys(rawEndpoints)
    for (const [name, raw] of Object.entries(rawEndpoints)) {
      const def = checkEndpoint(name, raw, names, modelNames, problems)
      if (def) endpoints.push(def)
    }
  }

  if (problems.length > 0) throw new SchemaError(problems)
  return { models, types, endpoints }
}
