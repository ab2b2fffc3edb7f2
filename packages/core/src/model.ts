// What core needs to know about a request or response type. Generated models (@trivium/codec's
// generator) implement this; `jsonSchemaModel` builds one by hand from a JSON Schema.

import { createRequire } from 'node:module'
import type { Ajv, ErrorObject } from 'ajv'
import { type FieldError, ValidationException } from './errors.js'

export interface Model<T = unknown> {
  /** Model name, used in error messages and docs. */
  readonly name: string
  /** JSON Schema of the JSON form: used for query-string coercion, docs and OpenAPI. */
  readonly jsonSchema?: JsonSchema
  /** Checks and converts the parsed JSON form. Throws ValidationException naming the fields. */
  fromJSON(json: unknown): T
  /** The JSON form of a value (plain data, ready for JSON.stringify). */
  toJSON(value: T): unknown
  /** Optional fast path: the JSON text of a value (e.g. fast-json-stringify). */
  stringify?(value: T): string
  /** Binary form (application/x-platform-binary); absent when the model has none. */
  encode?(value: T): Uint8Array
  /** Reads the binary form. Throws ValidationException (or a subclass) on bad input. */
  decode?(bytes: Uint8Array): T
}

/** The instance type of a model. */
export type ModelType<M> = M extends Model<infer T> ? T : never

export type JsonSchema = Record<string, unknown> & {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
}

// Loaded on the first schema model, not when core is imported: an app that imports @trivium/core before
// Fastify would otherwise evaluate ajv (which Fastify shares) ahead of Fastify, and that order alone made
// the app's own Fastify routes ~20 % slower (bench/README.md, "module layout").
let ajv: Ajv | undefined
function schemaCompiler(): Ajv {
  if (ajv === undefined) {
    const { Ajv: AjvClass } = createRequire(import.meta.url)('ajv') as typeof import('ajv')
    ajv = new AjvClass({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false })
  }
  return ajv
}

function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.')
  if (e.keyword === 'required') {
    // ajv's `required` error names the missing property in params.missingProperty
    const missing = String(e.params.missingProperty)
    return base ? `${base}.${missing}` : missing
  }
  return base || '(body)'
}

/** A model whose JSON form is checked against a JSON Schema (no binary form). */
export function jsonSchemaModel<T = unknown>(name: string, schema: JsonSchema): Model<T> {
  const validate = schemaCompiler().compile<T>(schema)
  return {
    name,
    jsonSchema: schema,
    fromJSON(json: unknown): T {
      if (validate(json)) return json
      const details: FieldError[] = (validate.errors ?? []).map((e) => ({
        field: fieldOf(e),
        message: e.keyword === 'required' ? 'is required' : (e.message ?? 'is invalid'),
      }))
      throw new ValidationException(`Invalid ${name}: ${details[0]?.field} ${details[0]?.message}`, details)
    },
    toJSON: (value: T) => value,
  }
}

/** Accepts any JSON value as is. The default when an endpoint names no model. */
export const anyModel: Model<unknown> = {
  name: 'any',
  fromJSON: (json: unknown) => json,
  toJSON: (value: unknown) => value,
}

/** An empty object: for endpoints that take no input. Unknown fields are ignored. */
export const emptyModel: Model<Record<string, never>> = {
  name: 'Empty',
  jsonSchema: { type: 'object', properties: {} },
  fromJSON(json: unknown) {
    if (json === undefined || json === null || (typeof json === 'object' && !Array.isArray(json))) return {}
    throw new ValidationException('Invalid Empty: (body) must be object', [
      { field: '(body)', message: 'must be object' },
    ])
  },
  toJSON: () => ({}),
  encode: () => new Uint8Array(0),
  decode: () => ({}),
}
