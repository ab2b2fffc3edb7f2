// `tsc -p <project>` for several projects in one process (scripts/test/type-check.ts starts it): a test that
// type-checks several tsconfigs pays TypeScript's load once, and a file that two projects read with the same
// source-affecting options (a lib .d.ts, @types/node, fastify's types, a package's .d.ts) is parsed and bound
// once, as TypeScript's language service shares them (its DocumentRegistry's key). Each project is still its own
// program with its own checker: every file of it, lib files too unless it says skipLibCheck, is checked under its
// own options. The report is tsc's own: the diagnostics tsc would print (config, syntactic, options, global,
// semantic, declaration, emit), sorted and deduplicated, in tsc's plain format relative to the project's cwd;
// it emits as tsc does. Requests: one JSON line `{ "cwd", "project" }` on stdin; answer: one JSON line
// `{ "stdout", "status" }` (what tsc would print, '' when clean, and its exit status) or `{ "error" }`.
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'

const require = createRequire(import.meta.url)
const ts = require('typescript')

const registry = ts.createDocumentRegistry()
/** Parsed (and, once a checker has used them, bound) source files, by source-affecting options and file. */
const parsed = new Map()

function sourceFileOptionsKey(options, languageVersionOrOptions) {
  const o =
    typeof languageVersionOrOptions === 'object'
      ? languageVersionOrOptions
      : { languageVersion: languageVersionOrOptions }
  return `${registry.getKeyForCompilationSettings(options)}|${o.languageVersion}|${o.impliedNodeFormat}|${o.jsDocParsingMode}`
}

function check(cwd, project) {
  const system = { ...ts.sys, getCurrentDirectory: () => cwd }
  let unrecoverable
  // As tsc: a directory means its tsconfig.json.
  const path = resolve(cwd, project)
  const file = ts.sys.directoryExists(path) ? join(path, 'tsconfig.json') : path
  const config = ts.getParsedCommandLineOfConfigFile(file, undefined, {
    ...system,
    onUnRecoverableConfigFileDiagnostic: (d) => (unrecoverable = d),
  })
  const format = {
    getCanonicalFileName: (f) => (ts.sys.useCaseSensitiveFileNames ? f : f.toLowerCase()),
    getCurrentDirectory: () => cwd,
    getNewLine: () => ts.sys.newLine,
  }
  if (config === undefined)
    return { stdout: ts.formatDiagnostics(unrecoverable ? [unrecoverable] : [], format), status: 1 }
  const { options } = config
  const host = ts.createCompilerHost(options)
  host.getCurrentDirectory = () => cwd
  const read = host.getSourceFile
  host.getSourceFile = (fileName, languageVersionOrOptions, onError, shouldCreate) => {
    const key = `${sourceFileOptionsKey(options, languageVersionOrOptions)}|${resolve(cwd, fileName)}`
    let file = parsed.get(key)
    if (file === undefined || shouldCreate) {
      file = read(fileName, languageVersionOrOptions, onError, shouldCreate)
      if (file !== undefined) parsed.set(key, file)
    }
    return file
  }
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options,
    projectReferences: config.projectReferences,
    host,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(config),
  })
  // tsc's emitFilesAndReportErrors, in its order.
  const all = [...program.getConfigFileParsingDiagnostics()]
  const configCount = all.length
  all.push(...program.getSyntacticDiagnostics())
  if (all.length === configCount) {
    all.push(...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics())
    if (all.length === configCount) {
      all.push(...program.getSemanticDiagnostics())
      if (options.declaration) all.push(...program.getDeclarationDiagnostics())
    }
  }
  const emitted = program.emit()
  all.push(...emitted.diagnostics)
  const diagnostics = ts.sortAndDeduplicateDiagnostics(all)
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).length
  // tsc's exit status: 1 when there is a diagnostic and nothing was emitted, 2 with errors and output, else 0.
  const status = emitted.emitSkipped && diagnostics.length > 0 ? 1 : errors > 0 ? 2 : 0
  return { stdout: ts.formatDiagnostics(diagnostics, format), status }
}

const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  let answer
  try {
    const { cwd, project } = JSON.parse(line)
    answer = check(cwd, project)
  } catch (err) {
    answer = { error: err instanceof Error ? (err.stack ?? err.message) : String(err) }
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`)
})
