// The schemas an endpoint takes as its request or response model, and the TypeScript types they give
// the handler: a Model<T> gives T, a TypeBox schema its `Static`, a Standard Schema its
// `InferInput`/`InferOutput`. Types only: `typebox` is an optional peer (read for its `Static` type).
import type { Model } from '../model.js'
import type { StandardSchemaV1 } from './standard-schema-spec.js'

/** A JSON Schema object (a TypeBox schema is one). */
export type JsonSchemaSource = object

/** What `request` / `response` accept: a Model, a Standard Schema, a TypeBox schema or a JSON Schema. */
export type ModelSource = Model<unknown> | StandardSchemaV1 | JsonSchemaSource

/**
 * The types a schema gives the handler and the client: `SchemaOutput` (what a handler receives for a
 * request schema, after validation and transforms) and `SchemaInput` (what a schema accepts: a handler's
 * response, a client's request). One definition, in @trivium/contract, which server and client share:
 * Model<T> → T, Standard Schema → InferOutput / InferInput, TypeBox → Static, other JSON Schema → unknown.
 */
export type { SchemaInput, SchemaOutput } from '@trivium/contract'
