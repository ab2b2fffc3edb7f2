// Standard Schema v1 → Model: Zod 4, Valibot, ArkType or any library implementing `~standard`. The
// library validates; this file turns its issues into Trivium's one validation error and asks the
// library for the JSON Schema it offers (Standard JSON Schema), for docs, OpenAPI, query coercion and
// the binary layout.
import { type FieldError, ValidationException } from '../errors.js'
import type { JsonSchema, Model } from '../model.js'
import { isThenable } from '../thenable.js'
import type { StandardJSONSchemaConverter, StandardSchemaV1 } from './standard-schema-spec.js'

const ignoreRefusal = (): void => {}

/** True for a value that implements Standard Schema (any version: the version is checked on use). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false
  const props = (value as { '~standard'?: unknown })['~standard']
  return typeof props === 'object' && props !== null
}

/** Why a Standard Schema cannot be used, or nothing when it can. */
export function standardSchemaProblem(schema: StandardSchemaV1): string | undefined {
  const props = schema['~standard'] as Partial<StandardSchemaV1.Props> & { version?: unknown }
  const vendor = typeof props.vendor === 'string' ? props.vendor : 'an unknown library'
  if (props.version !== 1) {
    return `its Standard Schema version is ${String(props.version)} (from ${vendor}); Trivium reads version 1`
  }
  if (typeof props.validate !== 'function') return `its ~standard.validate (from ${vendor}) is not a function`
  return undefined
}

/** The issue's path in dot form (`items.2.title`), or `(body)` for an issue about the whole value. */
function fieldOf(issue: StandardSchemaV1.Issue): string {
  const path = issue.path
  if (!path || path.length === 0) return '(body)'
  let out = ''
  for (const segment of path) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment
    const text = typeof key === 'symbol' ? (key.description ?? 'symbol') : String(key)
    out = out === '' ? text : `${out}.${text}`
  }
  return out
}

/** The issue's message without the path some libraries put in front of it (ArkType: `id must be …`). */
function messageOf(issue: StandardSchemaV1.Issue, field: string): string {
  const message = typeof issue.message === 'string' && issue.message !== '' ? issue.message : 'is invalid'
  return field !== '(body)' && message.startsWith(`${field} `) ? message.slice(field.length + 1) : message
}

/** The validation error of a failed result: every issue, the first one in the message. */
export function issuesError(
  name: string,
  issues: ReadonlyArray<StandardSchemaV1.Issue>,
): ValidationException {
  const details: FieldError[] = issues.map((issue) => {
    const field = fieldOf(issue)
    return { field, message: messageOf(issue, field) }
  })
  if (details.length === 0) details.push({ field: '(body)', message: 'is invalid' })
  return new ValidationException(`Invalid ${name}: ${details[0]?.field} ${details[0]?.message}`, details)
}

/**
 * The JSON Schema the library offers for the JSON form (`~standard.jsonSchema.input`, draft 2020-12),
 * or undefined when it offers none or cannot convert this schema (e.g. a transform).
 */
export function offeredJsonSchema(schema: StandardSchemaV1): JsonSchema | undefined {
  const converter = (schema['~standard'] as { jsonSchema?: StandardJSONSchemaConverter }).jsonSchema
  if (typeof converter !== 'object' || converter === null || typeof converter.input !== 'function') {
    return undefined
  }
  try {
    const out = converter.input({ target: 'draft-2020-12' }) as JsonSchema
    const { $schema: _dialect, ...rest } = out
    return rest
  } catch {
    return undefined
  }
}

/**
 * The JSON Schema of a model whose library offers none: any value, with a note that docs and OpenAPI
 * show (the schema still validates every call).
 */
export function undocumented(vendor: string): JsonSchema {
  return {
    description:
      `Not documented: this ${vendor} schema offers no JSON Schema (Standard JSON Schema, ` +
      '`~standard.jsonSchema`); the server validates it on every call.',
  }
}

export interface StandardSchemaModelOptions {
  /** The model's name in error messages and docs (default: the JSON Schema's `title`, else `Request`). */
  name?: string
}

/**
 * A model validated by a Standard Schema's `~standard.validate`. A synchronous result is returned as
 * is; an asynchronous one (a Zod `refine(async …)`, a Valibot `*Async` schema) makes `fromJSON` return
 * a promise, which the router awaits (PROTOCOL.md "Models from schemas").
 */
export function standardSchemaModel<S extends StandardSchemaV1>(
  schema: S,
  options: StandardSchemaModelOptions = {},
): Model<StandardSchemaV1.InferOutput<S>> {
  const problem = standardSchemaProblem(schema)
  if (problem !== undefined) throw new TypeError(`@trivium/core: this schema cannot be a model: ${problem}`)
  const jsonSchema = offeredJsonSchema(schema) ?? undocumented(schema['~standard'].vendor)
  const name = options.name ?? (typeof jsonSchema?.title === 'string' ? jsonSchema.title : 'Request')
  const validate = schema['~standard'].validate
  type Out = StandardSchemaV1.InferOutput<S>
  const settle = (result: StandardSchemaV1.Result<Out>): Out => {
    if (result.issues !== undefined) throw issuesError(name, result.issues)
    return result.value
  }
  return {
    name,
    jsonSchema,
    fromJSON(json: unknown): Out {
      const result = validate(json) as StandardSchemaV1.Result<Out> | Promise<StandardSchemaV1.Result<Out>>
      if (isThenable(result)) {
        const settled = Promise.resolve(result).then(settle)
        // Marked handled: a refusal must not become an unhandled rejection when the call ends (its client
        // went away, a middleware answered) before anything awaited the body. Awaiting it still throws.
        settled.catch(ignoreRefusal)
        return settled as unknown as Out
      }
      return settle(result)
    },
    toJSON: (value: Out) => value,
  }
}
