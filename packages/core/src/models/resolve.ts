// One rule for turning what an endpoint's `request` / `response` holds into a Model: a Model as it is,
// a Standard Schema through its `~standard.validate`, any other object as a JSON Schema (TypeBox's
// schemas are JSON Schema) compiled by core's ajv. The model's name: an explicit Model's own; else the
// schema's `title` or `$id`; else `<endpoint> request` / `<endpoint> response`.
import { isModelLike } from '@trivium/contract'
import { type JsonSchema, jsonSchemaModel, type Model } from '../model.js'
import type { ModelSource, SchemaOutput } from './schema-types.js'
import {
  isStandardSchema,
  offeredJsonSchema,
  standardSchemaModel,
  standardSchemaProblem,
} from './standard-schema.js'

// Models core built from schemas: the only ones a wire format may give a derived binary form (a Model
// written by hand or generated keeps exactly the forms it has).
const fromSchemas = new WeakSet<Model>()

/** True for a model core built from a schema (resolveModel, schemaModel). */
export function isSchemaModel(model: Model): boolean {
  return fromSchemas.has(model)
}

function built(model: Model): Model {
  fromSchemas.add(model)
  return model
}

/** True for an object that already is a Model (generated classes, `jsonSchemaModel`, hand-written). */
export function isModel(value: unknown): value is Model {
  return isModelLike(value) // the one rule, shared with the client
}

function titleOf(schema: JsonSchema | undefined): string | undefined {
  if (schema === undefined) return undefined
  if (typeof schema.title === 'string' && schema.title !== '') return schema.title
  if (typeof schema.$id === 'string' && schema.$id !== '') return schema.$id
  return undefined
}

/**
 * The Model for `source`, or undefined when there is none. Throws an Error whose message says why the
 * source cannot be a model (the registry prefixes the endpoint).
 */
export function resolveModel(source: unknown, fallbackName: string, name?: string): Model | undefined {
  if (source === undefined || source === null) return undefined
  if (isModel(source)) return source
  if (isStandardSchema(source)) {
    const problem = standardSchemaProblem(source)
    if (problem !== undefined) throw new Error(problem)
    return built(
      standardSchemaModel(source, { name: name ?? titleOf(offeredJsonSchema(source)) ?? fallbackName }),
    )
  }
  if (typeof source !== 'object' || Array.isArray(source)) {
    throw new Error(
      'must be a Model, a Standard Schema (Zod, Valibot, ArkType), a TypeBox schema or a JSON Schema',
    )
  }
  const schema = source as JsonSchema
  try {
    return built(jsonSchemaModel(name ?? titleOf(schema) ?? fallbackName, schema))
  } catch (err) {
    throw new Error(`is a JSON Schema that does not compile: ${(err as Error).message}`)
  }
}

export interface SchemaModelOptions {
  /** The name in validation messages (`Invalid <name>: …`) and docs; default the schema's title or `$id`. */
  name?: string
}

/**
 * A Model from a schema as people write it (TypeBox, Standard Schema, JSON Schema), with an explicit
 * name: `request: schemaModel(CreateOrder, { name: 'CreateOrder' })`. A Model is returned as it is.
 */
export function schemaModel<S extends ModelSource>(
  source: S,
  options: SchemaModelOptions = {},
): Model<SchemaOutput<S>> {
  const model = resolveModel(source, 'Model', options.name)
  if (model === undefined) throw new TypeError('@trivium/core: schemaModel needs a schema')
  return model as Model<SchemaOutput<S>>
}
