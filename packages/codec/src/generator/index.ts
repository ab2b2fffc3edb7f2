// @trivium/codec/generator — schema → TypeScript models (programmatic API of `trivium-codegen`).
// Pure functions: no file system access here (the CLI writes the files).
import { emit, type GeneratedFile, type GenerateOptions } from './emit.js'
import { checkSchema, parseSchemaText, type SchemaDef } from './schema.js'

export {
  type ChangeRule,
  type CompatibilityLevel,
  type CompatibilityReport,
  checkCompatibility,
  type SchemaChange,
} from './compat.js'
export type { GeneratedFile, GenerateOptions } from './emit.js'
export {
  checkSchema,
  type FieldRules,
  parseSchemaText,
  parseTypeExpression,
  type SchemaDef,
  SchemaError,
  type SchemaProblem,
  type TypeNode,
  typeKey,
} from './schema.js'

/**
 * Generates the files for a schema given as JSON text (duplicate keys are detected) or as an
 * object. Throws SchemaError naming model, field and reason for every problem.
 */
export function generate(schema: string | object, options?: GenerateOptions): GeneratedFile[] {
  const def: SchemaDef = checkSchema(typeof schema === 'string' ? parseSchemaText(schema) : schema)
  return emit(def, options)
}
