// What a consumer of `@trivium/auth` gets: no database driver with the main entry (the SQL stores are
// `@trivium/auth/sql`), no optional peer in the emitted types, and an explicit export list.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import * as auth from '@trivium/auth'
import t from 'tap'

const require = createRequire(import.meta.url)
const dist = dirname(require.resolve('@trivium/auth'))
const manifest = JSON.parse(readFileSync(join(dist, '..', 'package.json'), 'utf8'))

/**
 * Every file reachable by relative imports from `entry`, and the packages they import. The JavaScript is
 * bundled (esbuild, double quotes, `import "./chunk.js"`); a `.d.ts` names `./x.js`, whose types are `./x.d.ts`.
 */
function graph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    const text = readFileSync(file, 'utf8')
    const specifiers = /(?:import|export)[^'"]*?from\s*(['"])([^'"]+)\1|import\s*\(?\s*(['"])([^'"]+)\3/g
    for (const match of text.matchAll(specifiers)) {
      const spec = match[2] ?? match[4]!
      const target = file.endsWith('.d.ts') ? spec.replace(/\.js$/, '.d.ts') : spec
      if (spec.startsWith('.')) visit(resolve(dirname(file), target))
      else packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!)
    }
  }
  visit(entry)
  return { files, packages }
}

t.test('the main entry does not load @trivium/sql; the sql subpath does', async (t) => {
  t.notOk(manifest.dependencies['@trivium/sql'], '@trivium/sql is not a dependency')
  t.same(manifest.peerDependenciesMeta['@trivium/sql'], { optional: true })
  t.notOk(graph(join(dist, 'index.js')).packages.has('@trivium/sql'))
  t.ok(graph(join(dist, 'sql.js')).packages.has('@trivium/sql'))
  t.same(Object.keys(manifest.exports).sort(), ['.', './internal', './package.json', './sql'])
})

t.test('the main types import no optional peer (ioredis, @trivium/sql)', async (t) => {
  const types = graph(join(dist, 'index.d.ts'))
  t.notOk(types.packages.has('ioredis'), 'no ioredis in the .d.ts')
  t.notOk(types.packages.has('@trivium/sql'), 'no @trivium/sql in the .d.ts')
})

t.test('an explicit export list: helpers are under ./internal', async (t) => {
  const names = Object.keys(auth)
  for (const internal of [
    'checkSecret',
    'generateJti',
    'parseAccessClaims',
    'setUserContext',
    'SqlUserStore',
  ]) {
    t.notOk(names.includes(internal), `${internal} is not exported from the main entry`)
  }
  t.ok(names.length <= 45, `${names.length} runtime exports`)
  t.equal(typeof auth.triviumAuth, 'function')
})
