// The schemas an endpoint takes as its request or response model, and the TypeScript types they give
// the handler: a Model<T> gives T, a TypeBox schema its `Static`, a Standard Schema its
// `InferInput`/`InferOutput`. Types only: `typebox` is an optional peer (read for its `Static` type).
import type { Static } from 'typebox'
import type { Model } from '../model.js'
import type { StandardSchemaV1 } from './standard-schema-spec.js'

/** A JSON Schema object (a TypeBox schema is one). */
export type JsonSchemaSource = object

/** What `request` / `response` accept: a Model, a Standard Schema, a TypeBox schema or a JSON Schema. */
export type ModelSource = Model<any> | StandardSchemaV1 | JsonSchemaSource

/** A TypeBox 1.x schema, as its types declare it (`~kind`). */
type TypeBoxSchema = { readonly '~kind': string }

/**
 * The value a handler receives for a request schema (after validation and any transforms): Model<T> →
 * T, Standard Schema → InferOutput, TypeBox → Static, any other JSON Schema → unknown.
 */
export type SchemaOutput<S> =
  S extends Model<infer T>
    ? T
    : S extends StandardSchemaV1
      ? StandardSchemaV1.InferOutput<S>
      : S extends TypeBoxSchema
        ? Static<S>
        : unknown

/**
 * The value a schema accepts before validation — what a handler returns for a response schema and a
 * client sends for a request one: Model<T> → T, Standard Schema → InferInput, TypeBox → Static, any
 * other JSON Schema → unknown.
 */
export type SchemaInput<S> =
  S extends Model<infer T>
    ? T
    : S extends StandardSchemaV1
      ? StandardSchemaV1.InferInput<S>
      : S extends TypeBoxSchema
        ? Static<S>
        : unknown
