// Module hooks that run the test files' TypeScript (scripts/ts/register.mjs registers them; scripts/test.mjs
// uses them in place of tsx). Why not tsx: its hooks cost ~0.4–0.5 s of CPU more to start in every test process and
// ~1 s more to load the demo's ~800 dist modules (its resolver tries tsconfig paths and extensions for each),
// measured with /usr/bin/time on `node --import=tsx` vs these (docs/DEVELOPING.md). These hooks only touch what
// needs it: a `.ts` file is compiled by esbuild with tsx's own options (so the code and its stack traces are
// as under tsx), and a relative `./x.js` that does not exist is tried as `./x.ts` (TypeScript's import
// convention). Every other module passes straight to Node's own resolve and load.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const TS = /\.(?:ts|mts|cts)$/
const JS_TO_TS = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' }
/** tsx's esbuild options (tsx 4: its `transform` defaults), so a test runs the same code as under `npx tap`. */
const OPTIONS = {
  loader: 'ts',
  format: 'esm',
  target: `node${process.versions.node}`,
  sourcemap: 'inline',
  sourcesContent: Boolean(process.env.NODE_V8_COVERAGE),
  minifyWhitespace: true,
  keepNames: true,
}
/** Compiled files by the hash of their path and source: each test file's helpers are compiled once a run. */
const CACHE = join(tmpdir(), `trivium-ts-${process.getuid?.() ?? 'user'}`)

/** @trivium/crypto's password worker gets this in place of bcryptjs (the file says why and when). */
const BCRYPT_MEMO = new URL('./bcrypt-memo.mjs', import.meta.url).href
const PASSWORD_WORKER = /\/packages\/crypto\/dist\/password-worker\.js$/

export async function resolve(specifier, context, nextResolve) {
  try {
    const resolved = await nextResolve(specifier, context)
    if (specifier !== 'bcryptjs' || !PASSWORD_WORKER.test(context.parentURL ?? '')) return resolved
    return { url: `${BCRYPT_MEMO}?real=${encodeURIComponent(resolved.url)}`, shortCircuit: true }
  } catch (error) {
    const ext = /\.[mc]?js$/.exec(specifier)?.[0]
    const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:')
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !ext || !relative) throw error
    return nextResolve(specifier.slice(0, -ext.length) + JS_TO_TS[ext], context)
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TS.test(url.split('?')[0])) return nextLoad(url, context)
  const file = fileURLToPath(url)
  const source = readFileSync(file, 'utf8')
  const key = createHash('sha256').update(file).update('\0').update(source).update(JSON.stringify(OPTIONS))
  const cached = join(CACHE, `${key.digest('hex').slice(0, 32)}.js`)
  let code
  try {
    code = readFileSync(cached, 'utf8')
  } catch {
    // esbuild (a service process) only on a miss: a file whose compiled copy is cached starts none.
    const { transform } = await import('esbuild')
    code = (await transform(source, { ...OPTIONS, sourcefile: file })).code
    try {
      mkdirSync(CACHE, { recursive: true })
      // Written aside and renamed: test files running at once never read half a file.
      const aside = `${cached}.${process.pid}`
      writeFileSync(aside, code)
      renameSync(aside, cached)
    } catch {}
  }
  return { format: 'module', source: code, shortCircuit: true }
}
