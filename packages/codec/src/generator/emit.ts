// Emits TypeScript for checked schema definitions. The output is specialised per model: every field
// is one straight-line read/write/convert statement; containers get one helper function per distinct
// type (e.g. `[int32?]`), shared by the module. Nothing interprets the schema at run time.
// This file lists the files; their parts, one file each: emit-types.ts (per-type expressions and
// container helpers), emit-models.ts (the models file), emit-json-schema.ts (the JSON Schemas),
// emit-endpoints.ts (the endpoint table, typed client and server helper), emit-shared.ts.
import { endpointsFile, serverFile } from './emit-endpoints.js'
import { modelJsonSchema } from './emit-json-schema.js'
import { ModelEmitter } from './emit-models.js'
import { HEADER } from './emit-shared.js'
import type { SchemaDef } from './schema.js'

export interface GenerateOptions {
  /** Module the generated code imports the runtime from (default `@trivium/codec/runtime`). */
  runtimeImport?: string
  /** Module the server helper imports types from (default `@trivium/core`). */
  coreImport?: string
}

export interface GeneratedFile {
  /** Path relative to the output directory. */
  path: string
  contents: string
}

/** TypeScript (and JSON Schema) files for checked definitions. */
export function emit(schema: SchemaDef, options: GenerateOptions = {}): GeneratedFile[] {
  const runtimeImport = options.runtimeImport ?? '@trivium/codec/runtime'
  const coreImport = options.coreImport ?? '@trivium/core'
  const m = new ModelEmitter(schema)
  const files: GeneratedFile[] = [{ path: 'models.ts', contents: m.modelsFile(runtimeImport, schema.types) }]
  const index = [HEADER, "export * from './models.js'"]
  if (schema.endpoints.length > 0) {
    files.push({ path: 'endpoints.ts', contents: endpointsFile(schema, runtimeImport) })
    files.push({ path: 'server.ts', contents: serverFile(schema, coreImport) })
    index.push("export * from './endpoints.js'")
  }
  files.push({ path: 'index.ts', contents: `${index.join('\n')}\n` })
  for (const model of schema.models) {
    files.push({
      path: `schemas/${model.name}.json`,
      contents: `${JSON.stringify(modelJsonSchema(schema, model), null, 2)}\n`,
    })
  }
  return files
}
