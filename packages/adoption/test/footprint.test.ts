// What each package costs a consumer (issue 33 item 4): every publishable package's tarball installed
// alone with npm (plus the tarballs of the @trivium/* packages it depends on, as the registry would
// supply them) into an empty app outside the workspace, its package count and size on disk held to a
// budget written here. npm installs non-optional peers, so `fastify` (48 packages, ~8 MB alone) is in
// most rows. Optional engines stay out: PGlite is an optional peer of @trivium/sql, so @trivium/rbac
// does not pull it; OpenTelemetry's API is a peer of @trivium/tracing (the app's one copy holds the
// global tracer). npm uses its cache first (`--prefer-offline`); two installs run at a time.
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
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|TAP|_TAPJS)/.test(k)),
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
  '@trivium/core': { packages: 56, megabytes: 11 },
  '@trivium/crypto': { packages: 65, megabytes: 13 },
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

t.before(async () => {
  const packages = publishablePackages()
  for (const p of packages) {
    if (!existsSync(join(p.dir, 'dist', 'index.js')))
      throw new Error(`${p.name} is not built: run \`npx pnpm build\` first`)
  }
  const tarballs = packAll(join(work, 'tarballs'), { ignoreScripts: true })
  const queue = [...packages]
  const worker = async () => {
    for (let p = queue.shift(); p !== undefined; p = queue.shift()) {
      const specs = closure(p.name).map((n) => tarballs.get(n) as string)
      footprints.set(p.name, await install(join(work, p.name.replace('/', '+')), specs))
    }
  }
  await Promise.all([worker(), worker()])
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

t.test("@opentelemetry/api is a peer of @trivium/tracing: one copy, the app's", async (t) => {
  const f = footprints.get('@trivium/tracing')
  t.same(
    f?.packages.filter((p) => p.endsWith('/@opentelemetry/api')),
    ['node_modules/@opentelemetry/api'],
    'installed once, at the top (npm installs the peer for the app)',
  )
  const dir = join(work, '@trivium+tracing', 'node_modules', '@trivium', 'tracing', 'package.json')
  const pkg = JSON.parse(readFileSync(dir, 'utf8')) as Record<string, Record<string, string> | undefined>
  t.equal(pkg.dependencies?.['@opentelemetry/api'], undefined, 'not a dependency')
  t.ok(pkg.peerDependencies?.['@opentelemetry/api'], 'a peer dependency')
})

async function install(dir: string, specs: string[]): Promise<Footprint> {
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'footprint', private: true }))
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: dir,
    env,
  })
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>
  }
  return {
    packages: Object.keys(lock.packages).filter((k) => k.startsWith('node_modules/')),
    megabytes: size(join(dir, 'node_modules')) / 1024 / 1024,
  }
}

function size(path: string): number {
  const st = lstatSync(path)
  if (!st.isDirectory()) return st.size
  return readdirSync(path).reduce((sum, e) => sum + size(join(path, e)), 0)
}
