// The schema evolution rule (PROTOCOL.md "Models and the message envelope (versioning)"), checked by a
// machine: new fields are appended at the end of a model and are nullable; fields are never removed,
// reordered or retyped; endpoints keep their models and their kind. The binary format is positional, so a
// renamed field still reads on binary and breaks JSON readers: level `wire` lets it pass, `wire+json`
// (the default, as buf's WIRE_JSON) refuses it.
import {
  checkSchema,
  type FieldDef,
  type ModelDef,
  parseSchemaText,
  type SchemaDef,
  typeKey,
} from './schema.js'

/** `wire`: binary readers only (renames pass); `wire+json`: JSON readers too (the default). */
export type CompatibilityLevel = 'wire' | 'wire+json'

export type ChangeRule =
  | 'model-removed'
  | 'field-removed'
  | 'field-inserted'
  | 'field-moved'
  | 'field-renamed'
  | 'type-changed'
  | 'nullable-to-required'
  | 'required-to-nullable'
  | 'new-field-required'
  | 'endpoint-removed'
  | 'endpoint-model-changed'
  | 'endpoint-kind-changed'
  | 'endpoint-route-changed'

export interface SchemaChange {
  rule: ChangeRule
  /** What the change is about: `Order.note`, `Item`, `endpoint orders.create`. */
  subject: string
  model?: string
  field?: string
  endpoint?: string
  /** Whether it breaks readers at the level asked for (a rename breaks only JSON readers). */
  breaking: boolean
  /** One line: `Order.note: inserted before existing field total (append new fields at the end)`. */
  message: string
}

export interface CompatibilityReport {
  level: CompatibilityLevel
  compatible: boolean
  /** Every change the rule has a word for, breaking or not (renames at level `wire`). */
  changes: SchemaChange[]
}

interface Context {
  level: CompatibilityLevel
  changes: SchemaChange[]
}

function add(
  ctx: Context,
  change: Omit<SchemaChange, 'breaking' | 'message'>,
  text: string,
  breaking = true,
) {
  ctx.changes.push({ ...change, breaking, message: `${change.subject}: ${text}` })
}

const nullable = (field: FieldDef) => field.type.kind === 'nullable'
/** What an old writer's missing bytes can read as: `T?` and `any` (which holds null) (PROTOCOL.md). */
const mayBeAbsent = (field: FieldDef) => nullable(field) || field.type.kind === 'any'
const baseType = (field: FieldDef) => (field.type.kind === 'nullable' ? field.type.inner : field.type)

/** The fields of `old` still in `next`, the new ones, and how each field moved. */
function compareModel(ctx: Context, old: ModelDef, next: ModelDef): void {
  const model = old.name
  const nextByName = new Map(next.fields.map((f, i) => [f.name, { field: f, index: i }]))
  const oldNames = new Set(old.fields.map((f) => f.name))
  // A field missing from `next` whose position holds a field new to `next` with the same type: a rename.
  const renamedTo = new Map<string, FieldDef>()
  for (const [i, field] of old.fields.entries()) {
    if (nextByName.has(field.name)) continue
    const there = next.fields[i]
    if (there && !oldNames.has(there.name) && typeKey(there.type) === typeKey(field.type))
      renamedTo.set(field.name, there)
  }
  const renamedFrom = new Map([...renamedTo].map(([from, to]) => [to.name, from]))

  for (const [i, field] of old.fields.entries()) {
    const subject = `${model}.${field.name}`
    const renamed = renamedTo.get(field.name)
    if (renamed) {
      add(
        ctx,
        { rule: 'field-renamed', subject: `${model}.${renamed.name}`, model, field: renamed.name },
        `renamed from ${field.name} (binary reads it by position, JSON readers by name)`,
        ctx.level === 'wire+json',
      )
      continue
    }
    const found = nextByName.get(field.name)
    if (!found) {
      add(
        ctx,
        { rule: 'field-removed', subject, model, field: field.name },
        'field removed (fields are never removed)',
      )
      continue
    }
    if (found.index !== i && !keptOrder(old, next, field.name)) {
      add(
        ctx,
        { rule: 'field-moved', subject, model, field: field.name },
        `moved from position ${i + 1} to ${found.index + 1} (fields are never reordered)`,
      )
    }
    compareField(ctx, model, field, found.field)
  }

  for (const [i, field] of next.fields.entries()) {
    if (oldNames.has(field.name) || renamedFrom.has(field.name)) continue
    const subject = `${model}.${field.name}`
    const later = next.fields.slice(i + 1).find((f) => oldNames.has(f.name) || renamedFrom.has(f.name))
    if (later) {
      add(
        ctx,
        { rule: 'field-inserted', subject, model, field: field.name },
        `inserted before existing field ${renamedFrom.get(later.name) ?? later.name} (append new fields at the end)`,
      )
    } else if (!mayBeAbsent(field)) {
      add(
        ctx,
        { rule: 'new-field-required', subject, model, field: field.name },
        `new field is required: ${field.expr} (new fields must be nullable: old writers do not send them)`,
      )
    }
  }
}

/**
 * Whether `name` kept its place among the fields both versions have (it moved only because fields were
 * inserted or removed before it: reported once, there).
 */
function keptOrder(old: ModelDef, next: ModelDef, name: string): boolean {
  const nextNames = new Set(next.fields.map((f) => f.name))
  const oldNames = new Set(old.fields.map((f) => f.name))
  const before = old.fields.filter((f) => nextNames.has(f.name)).map((f) => f.name)
  const after = next.fields.filter((f) => oldNames.has(f.name)).map((f) => f.name)
  return before.indexOf(name) === after.indexOf(name)
}

function compareField(ctx: Context, model: string, old: FieldDef, next: FieldDef): void {
  const subject = `${model}.${old.name}`
  const where = { subject, model, field: old.name }
  const oldBase = typeKey(baseType(old))
  const nextBase = typeKey(baseType(next))
  if (oldBase !== nextBase) {
    add(ctx, { rule: 'type-changed', ...where }, `type changed ${old.expr} → ${next.expr}`)
  } else if (nullable(old) && !nullable(next)) {
    add(ctx, { rule: 'nullable-to-required', ...where }, 'nullable → required')
  } else if (!nullable(old) && nullable(next)) {
    add(
      ctx,
      { rule: 'required-to-nullable', ...where },
      'required → nullable (the binary form gains a null marker old readers do not expect)',
    )
  }
}

/** Where in `schema` a model is referred to: `Order.items`, `endpoint orders.create`. */
function referencesTo(schema: SchemaDef, name: string): string[] {
  const refs: string[] = []
  const mentions = (expr: string) => new RegExp(`@${name}\\b`).test(expr)
  for (const model of schema.models)
    for (const field of model.fields) if (mentions(field.expr)) refs.push(`${model.name}.${field.name}`)
  for (const endpoint of schema.endpoints)
    if (endpoint.request === name || endpoint.response === name) refs.push(`endpoint ${endpoint.name}`)
  return refs
}

const kindOf = (e: { streaming: boolean; requestStream: boolean }) =>
  e.requestStream
    ? e.streaming
      ? 'bidirectional stream'
      : 'client stream'
    : e.streaming
      ? 'server stream'
      : 'unary'

/**
 * Compares a schema with the one it replaces. Both are checked (`checkSchema`) first; a change that breaks
 * the evolution rule is `breaking`, and `compatible` is true when none is.
 */
export function checkCompatibility(
  oldSchema: string | object | SchemaDef,
  newSchema: string | object | SchemaDef,
  options: { level?: CompatibilityLevel } = {},
): CompatibilityReport {
  const level = options.level ?? 'wire+json'
  if (level !== 'wire' && level !== 'wire+json')
    throw new TypeError(`level must be wire or wire+json, got ${level}`)
  const old = definitions(oldSchema)
  const next = definitions(newSchema)
  const ctx: Context = { level, changes: [] }
  const nextModels = new Map(next.models.map((m) => [m.name, m]))
  for (const model of old.models) {
    const kept = nextModels.get(model.name)
    if (kept) {
      compareModel(ctx, model, kept)
      continue
    }
    const users = referencesTo(old, model.name)
    add(
      ctx,
      { rule: 'model-removed', subject: model.name, model: model.name },
      users.length > 0
        ? `model removed while ${users.join(', ')} still refers to it`
        : 'model removed (stored or in-flight messages of it could no longer be read)',
    )
  }
  const nextEndpoints = new Map(next.endpoints.map((e) => [e.name, e]))
  for (const endpoint of old.endpoints) {
    const subject = `endpoint ${endpoint.name}`
    const where = { subject, endpoint: endpoint.name }
    const kept = nextEndpoints.get(endpoint.name)
    if (!kept) {
      add(ctx, { rule: 'endpoint-removed', ...where }, 'endpoint removed (deployed clients still call it)')
      continue
    }
    for (const side of ['request', 'response'] as const) {
      if (endpoint[side] !== kept[side])
        add(
          ctx,
          { rule: 'endpoint-model-changed', ...where },
          `${side} model changed ${endpoint[side]} → ${kept[side]}`,
        )
    }
    if (kindOf(endpoint) !== kindOf(kept))
      add(ctx, { rule: 'endpoint-kind-changed', ...where }, `${kindOf(endpoint)} made ${kindOf(kept)}`)
    if (endpoint.method !== kept.method || endpoint.url !== kept.url)
      add(
        ctx,
        { rule: 'endpoint-route-changed', ...where },
        `HTTP route changed ${endpoint.method} ${endpoint.url} → ${kept.method} ${kept.url}`,
      )
  }
  return { level, compatible: ctx.changes.every((c) => !c.breaking), changes: ctx.changes }
}

function definitions(schema: string | object | SchemaDef): SchemaDef {
  if (typeof schema === 'object' && schema !== null && isSchemaDef(schema)) return schema
  return checkSchema(typeof schema === 'string' ? parseSchemaText(schema) : schema)
}

function isSchemaDef(value: object): value is SchemaDef {
  return Array.isArray((value as { models?: unknown }).models)
}
