// The bundled packages (scripts/build-package.mjs) are built without esbuild's `keepNames`: it wrapped every
// named closure in `__name(fn, "…")`, an `Object.defineProperty` each time the closure is made, which put
// work on every call of the hot paths (bench/README.md, "Transport cost per message"). Without it the bundler
// may rename a top-level name two modules share (`Foo` → `Foo2`) or a class that names itself in its own body
// (`class _Foo`), and `.name` — in stack traces, logs, `err.name` of classes that do not set it — would show
// the renamed one. This pins that every class and function the published entry points export keeps a name
// its source declares.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'))

/** The JavaScript targets of an exports map (`./dist/….js`). */
function targets(exports: unknown): string[] {
  if (typeof exports === 'string')
    return exports.startsWith('./dist/') && exports.endsWith('.js') ? [exports] : []
  if (exports === null || typeof exports !== 'object') return []
  return [...new Set(Object.values(exports).flatMap(targets))]
}

/** Every TypeScript source of a package, concatenated. */
function sourceText(dir: string): string {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))
  return files.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n')
}

const bundled = readdirSync(join(root, 'packages')).filter((dir) =>
  String(readJson(join('packages', dir, 'package.json')).scripts?.build ?? '').includes('build-package.mjs'),
)

t.ok(bundled.length >= 6, `the bundled packages are found (${bundled.join(', ')})`)

for (const dir of bundled) {
  t.test(`${dir}: every exported class and function keeps a name its source declares`, async (t) => {
    const manifest = readJson(join('packages', dir, 'package.json'))
    const source = sourceText(join(root, 'packages', dir, 'src'))
    const declared = (name: string) =>
      new RegExp(`\\b(class|function\\*?|const|let)\\s+${name}\\b`).test(source)
    let checked = 0
    for (const target of targets(manifest.exports)) {
      const mod = (await import(pathToFileURL(join(root, 'packages', dir, target)).href)) as Record<
        string,
        unknown
      >
      for (const [exported, value] of Object.entries(mod)) {
        if (typeof value !== 'function' || exported === 'default') continue
        checked++
        if (value.name === exported) continue
        t.ok(
          /^[A-Za-z][A-Za-z0-9]*$/.test(value.name) && declared(value.name),
          `${target} ${exported}: .name ${JSON.stringify(value.name)} is declared in src`,
        )
      }
    }
    t.ok(checked > 0, `${checked} exported functions checked`)
  })
}
