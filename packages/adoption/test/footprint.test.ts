// What each package costs a consumer (issue 33 item 4): what npm installs for each publishable package's
// tarball alone (with the tarballs of the @trivium/* packages it depends on, as the registry would supply
// them), outside the workspace — its package count and size on disk held to a budget written here. npm
// installs non-optional peers, so `fastify` (48 packages, ~8 MB alone) is in most rows. Optional engines
// stay out: PGlite is an optional peer of @trivium/sql, so @trivium/rbac does not pull it; OpenTelemetry's
// API is a peer of @trivium/tracing (the app's one copy holds the global tracer). npm uses its cache first.
import { execFile } from 'node:child_process'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { closure, packAll, publishablePackages } from '../../../scripts/pack.mjs'

const run = promisify(execFile)
// Without tap's hooks (NODE_OPTIONS) and a coverage run's NODE_V8_COVERAGE: npm's work counts for no package.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP|_TAPJS)/.test(k)),
)

/**
 * Budget per package: packages installed (npm's lockfile entries) and megabytes on disk, at most — what
 * was measured (issue 33) plus a little room for dependency updates. With PGlite as a dependency of
 * @trivium/sql, @trivium/rbac measured 71 packages / 37 MB and @trivium/sql 20 / 28 MB.
 */
const BUDGET: Record<string, { packages: number; megabytes: number }> = {
  '@trivium/auth': { packages: 80, megabytes: 15 },
  '@trivium/client': { packages: 8, megabytes: 3 },
  '@trivium/codec': { packages: 57, megabytes: 11 },
  '@trivium/contract': { packages: 1, megabytes: 1 }, // no dependency; typebox is an optional peer (types)
  '@trivium/core': { packages: 56, megabytes: 11 },
  '@trivium/crypto': { packages: 16, megabytes: 4 }, // fastify is an optional peer (issue 40): 13 / 2.6 MB
  '@trivium/frame-session': { packages: 57, megabytes: 11 },
  '@trivium/metrics': { packages: 61, megabytes: 14 },
  '@trivium/openapi': { packages: 57, megabytes: 11 },
  '@trivium/protections': { packages: 57, megabytes: 11 },
  '@trivium/rbac': { packages: 74, megabytes: 15 },
  '@trivium/redis-bus': { packages: 14, megabytes: 3 },
  '@trivium/sql': { packages: 23, megabytes: 5 },
  '@trivium/tcp': { packages: 58, megabytes: 11 },
  '@trivium/tracing': { packages: 58, megabytes: 12 },
  '@trivium/validation': { packages: 57, megabytes: 11 },
  '@trivium/websocket': { packages: 71, megabytes: 12 },
  '@trivium/wire': { packages: 5, megabytes: 1 },
}

interface Footprint {
  packages: string[]
  megabytes: number
}

const work = mkdtempSync(join(tmpdir(), 'trivium-footprint-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
const footprints = new Map<string, Footprint>()

// npm extracting ~50 packages 17 times is too slow on a busy machine: one install of every tarball, and each
// package's footprint is what it needs of that tree — its dependencies and required peers, transitively,
// followed in npm's lockfile as Node resolves them. One package (@trivium/rbac) is also installed really
// alone, to check that walk against npm.
let aloneRbac: string[] = []
t.before(async () => {
  const packages = publishablePackages()
  for (const p of packages) {
    if (!existsSync(join(p.dir, 'dist', 'index.js')))
      throw new Error(`${p.name} is not built: run \`npx pnpm build\` first`)
  }
  const tarballs = packAll(join(work, 'tarballs'), { ignoreScripts: true })
  const all = join(work, 'all')
  const alone = join(work, 'rbac-alone')
  await Promise.all([
    npmInstall(all, [...tarballs.values()]),
    npmInstall(
      alone,
      closure('@trivium/rbac').map((n) => tarballs.get(n) as string),
    ),
  ])
  aloneRbac = [...lockOf(join(alone, 'node_modules', '.package-lock.json')).keys()]
  const lock = lockOf(join(all, 'node_modules', '.package-lock.json'))
  for (const p of packages) {
    const paths = needs(lock, `node_modules/${p.name}`)
    const bytes = paths.reduce((sum, path) => sum + size(join(all, path), true), 0)
    footprints.set(p.name, { packages: paths, megabytes: bytes / 1024 / 1024 })
  }
})

t.test('the walk of the shared tree counts what npm installs for a package alone', async (t) => {
  t.same(
    footprints.get('@trivium/rbac')?.packages.map(nameOf).sort(),
    aloneRbac.map(nameOf).sort(),
    '@trivium/rbac: the same packages',
  )
})

t.test('every publishable package has a budget', async (t) => {
  t.same(
    Object.keys(BUDGET).sort(),
    publishablePackages()
      .map((p) => p.name)
      .sort(),
  )
})

t.test('each package installed alone stays within its budget', async (t) => {
  for (const [name, budget] of Object.entries(BUDGET)) {
    const f = footprints.get(name)
    if (!f) {
      t.fail(`${name} was not installed`)
      continue
    }
    t.ok(
      f.packages.length <= budget.packages,
      `${name}: ${f.packages.length} packages (budget ${budget.packages})`,
    )
    t.ok(
      f.megabytes <= budget.megabytes,
      `${name}: ${f.megabytes.toFixed(2)} MB (budget ${budget.megabytes})`,
    )
  }
})

t.test('the embedded engine is optional: PostgreSQL users do not install PGlite', async (t) => {
  for (const name of ['@trivium/sql', '@trivium/rbac', '@trivium/auth']) {
    t.notOk(
      footprints.get(name)?.packages.some((p) => p.includes('@electric-sql/pglite')),
      `${name} installs no @electric-sql/pglite`,
    )
  }
})

t.test('connectPglite without the optional peer names the package to install', async (t) => {
  const code = "import('@trivium/sql').then((m) => m.connectPglite()).catch((e) => console.log(e.message))"
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], {
    cwd: join(work, 'all'),
    env,
  })
  t.equal(
    stdout.trim(),
    '@trivium/sql: connectPglite needs the optional peer @electric-sql/pglite: install it (npm install @electric-sql/pglite)',
  )
})

t.test("@opentelemetry/api is a peer of @trivium/tracing: one copy, the app's", async (t) => {
  const f = footprints.get('@trivium/tracing')
  t.same(
    f?.packages.filter((p) => p.endsWith('/@opentelemetry/api')),
    ['node_modules/@opentelemetry/api'],
    'installed once, at the top (npm installs the peer for the app)',
  )
  const file = join(work, 'all', 'node_modules', '@trivium', 'tracing', 'package.json')
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, string> | undefined>
  t.equal(pkg.dependencies?.['@opentelemetry/api'], undefined, 'not a dependency')
  t.ok(pkg.peerDependencies?.['@opentelemetry/api'], 'a peer dependency')
})

async function npmInstall(dir: string, specs: string[]) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'footprint', private: true }))
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: dir,
    env,
  })
}

/** `node_modules/a/node_modules/@s/b` → `@s/b` */
function nameOf(path: string): string {
  return path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
}

interface LockEntry {
  version: string
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

/** The installed packages of an npm lockfile: path (`node_modules/a/node_modules/b`) → entry. */
function lockOf(file: string): Map<string, LockEntry> {
  const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, LockEntry> }
  return new Map(Object.entries(lock.packages).filter(([k]) => k.startsWith('node_modules/')))
}

/** `start` and everything it needs: dependencies, optional ones present, non-optional peers. */
function needs(lock: Map<string, LockEntry>, start: string): string[] {
  const seen = new Set<string>()
  const visit = (path: string) => {
    if (seen.has(path)) return
    const entry = lock.get(path)
    if (!entry) throw new Error(`${path} is not installed`)
    seen.add(path)
    const meta = entry.peerDependenciesMeta ?? {}
    const required = [
      ...Object.keys(entry.dependencies ?? {}),
      ...Object.keys(entry.peerDependencies ?? {}).filter((n) => meta[n]?.optional !== true),
    ]
    for (const name of required) visit(resolveIn(lock, path, name) ?? `${path} → ${name}`)
    for (const name of Object.keys(entry.optionalDependencies ?? {})) {
      const found = resolveIn(lock, path, name)
      if (found) visit(found)
    }
  }
  visit(start)
  return [...seen]
}

/** Where Node finds `name` from the package at `path`: its own node_modules, then each parent's. */
function resolveIn(lock: Map<string, LockEntry>, path: string, name: string): string | undefined {
  for (let base = path; ; ) {
    if (lock.has(`${base}/node_modules/${name}`)) return `${base}/node_modules/${name}`
    const i = base.lastIndexOf('/node_modules/')
    if (i < 0) break
    base = base.slice(0, i)
  }
  return lock.has(`node_modules/${name}`) ? `node_modules/${name}` : undefined
}

/** Bytes on disk under `path`; a package's own, without its nested node_modules, when `own`. */
function size(path: string, own = false): number {
  const st = lstatSync(path)
  if (!st.isDirectory()) return st.size
  return readdirSync(path)
    .filter((e) => !(own && e === 'node_modules'))
    .reduce((sum, e) => sum + size(join(path, e)), 0)
}
