// Shared by the codec bench and fuzz scripts: generates models from a schema with @trivium/codec's
// generator, transpiles them with TypeScript into a temp dir and imports them. Dependencies are
// resolved from packages/codec (where they are installed).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
export const codecDir = join(here, '..', '..', 'packages', 'codec')
export const requireFromCodec = createRequire(join(codecDir, 'package.json'))

/** Imports a dependency installed in packages/codec. */
export async function importDep(name) {
  return import(pathToFileURL(requireFromCodec.resolve(name)).href)
}

export async function loadModels(schema) {
  const { generate } = await import(pathToFileURL(join(codecDir, 'dist', 'generator', 'index.js')).href)
  const ts = requireFromCodec('typescript')
  const runtime = pathToFileURL(join(codecDir, 'dist', 'runtime', 'index.js')).href
  const dir = mkdtempSync(join(tmpdir(), 'trivium-bench-'))
  for (const file of generate(schema, { runtimeImport: runtime })) {
    if (!file.path.endsWith('.ts')) continue
    const js = ts.transpileModule(file.contents, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText
    const out = join(dir, file.path.replace(/\.ts$/, '.mjs'))
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, js.replaceAll("'./models.js'", "'./models.mjs'"))
  }
  return import(pathToFileURL(join(dir, 'models.mjs')).href)
}
