// Imports a README's TypeScript snippet as a module: transpiled (no type check) and written into `dir`, a
// folder of the package whose README it is, so that its imports resolve as they do for that package's users.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Test } from 'tap'
import ts from 'typescript'

export async function importSnippet<T>(t: Test, source: string, dir: URL): Promise<T> {
  const js = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  const scratch = mkdtempSync(join(fileURLToPath(dir), '.readme-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  const file = join(scratch, 'example.mjs')
  writeFileSync(file, js)
  return (await import(pathToFileURL(file).href)) as T
}
