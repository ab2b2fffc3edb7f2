// Builds one workspace package (run in its directory, from its `build` and `prepack` scripts):
// `tsc --emitDeclarationOnly` writes the `.d.ts` files (the published types, unchanged), and esbuild writes
// the JavaScript as a few files instead of one per source module.
//
// Why: Node's ESM loader costs per module (resolution, reading the file, the module record), so a cold
// `import('@trivium/auth')` spent most of its time loading ~100 small files (bench/README.md, "Cold import").
// esbuild bundles the package's own modules (every bare specifier — other @trivium packages, npm
// dependencies, node: built-ins — stays an import, so workspace packages remain separate packages) with
// `splitting` over its entry points: each subpath of the `exports` map (`.`, `./internal`, …) gets its file,
// and what two subpaths share sits in a common chunk, so there is one instance of each class and
// `instanceof` holds across subpaths. Linked source maps (no sources embedded: `src` is published) map
// coverage and `--enable-source-maps` stack traces back to `src/*.ts`.
//
// Entry points: every `./dist/….js` named by the `exports` map, plus the source files given as arguments
// (files loaded by path rather than by a subpath: a worker, a CLI, a file a test imports from dist).
// `--clean` empties `dist` first (prepack: a tarball from a clean build).
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

const args = process.argv.slice(2)
const clean = args.includes('--clean')
const extraEntries = args.filter((a) => !a.startsWith('--'))
const pkgDir = process.cwd()
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))
const require = createRequire(import.meta.url)

/** `./dist/a/b.js` → `src/a/b.ts`, for every JavaScript target of the exports map. */
function exportEntries(exports) {
  const targets = []
  const walk = (value) => {
    if (typeof value === 'string') targets.push(value)
    else if (value && typeof value === 'object') for (const v of Object.values(value)) walk(v)
  }
  walk(exports ?? {})
  return targets
    .filter((t) => t.startsWith('./dist/') && t.endsWith('.js'))
    .map((t) => `src/${t.slice('./dist/'.length, -'.js'.length)}.ts`)
}

/** Removes the JavaScript and its maps from a previous build (chunk names change with their content). */
function removeOldJavaScript(dir) {
  let entries
  try {
    entries = readdirSync(dir)
  } catch {
    return
  }
  for (const name of entries) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) removeOldJavaScript(path)
    else if (/\.js(\.map)?$/.test(name)) rmSync(path)
  }
}

if (clean) rmSync(join(pkgDir, 'dist'), { recursive: true, force: true })
else removeOldJavaScript(join(pkgDir, 'dist'))

const tsc = require.resolve('typescript/bin/tsc')
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--emitDeclarationOnly'], {
  stdio: 'inherit',
})

const entryPoints = [...new Set([...exportEntries(pkg.exports), ...extraEntries])]
const esbuild = await import('esbuild')
const result = await esbuild.build({
  absWorkingDir: pkgDir,
  entryPoints,
  outdir: 'dist',
  outbase: 'src',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'es2022',
  tsconfig: 'tsconfig.build.json',
  // Bare specifiers are other packages: imported at run time, never copied in.
  packages: 'external',
  // The same code tsc emitted, and every module evaluated as before: no dropping of unused declarations
  // (coverage counts the same lines) nor of imported modules because of `"sideEffects": false`.
  treeShaking: false,
  ignoreAnnotations: true,
  // No keepNames: it wraps each named closure in `__name(fn, "…")`, run every time the closure is made —
  // per call on hot paths (+8 to +25 % instructions per bridged call). A renamed top-level binding would
  // show in `.name`: scripts/test/export-names.test.ts checks the exported ones; error classes set `name`.
  keepNames: false,
  sourcemap: 'linked',
  sourcesContent: false,
  // Chunks beside the entry files, so `new URL('./x.js', import.meta.url)` (crypto's password worker)
  // resolves the same from any of them.
  chunkNames: '[name]-[hash]',
  logLevel: 'warning',
})
if (result.errors.length > 0) process.exit(1)
