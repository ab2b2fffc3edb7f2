// Packs every publishable workspace package (packages/*, not private) with pnpm, the way `pnpm -r publish`
// would (workspace:^ ranges become real versions), and says which tarballs a consumer needs for each one.
// Shared by the adoption test and scripts/install-footprint.mjs.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const root = resolve(import.meta.dirname, '..')

/** @returns {{ name: string, dir: string, version: string, dependencies: string[] }[]} */
export function publishablePackages() {
  const dir = join(root, 'packages')
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => {
      const pkgDir = join(dir, e.name)
      let pkg
      try {
        pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))
      } catch {
        return []
      }
      if (pkg.private) return []
      const dependencies = Object.keys(pkg.dependencies ?? {}).filter((d) => d.startsWith('@trivium/'))
      return [{ name: pkg.name, dir: pkgDir, version: pkg.version, dependencies }]
    })
    .sort((a, b) => a.name.localeCompare(b.name))
}

/**
 * Runs `pnpm pack` for every publishable package into `dest`.
 * `ignoreScripts` skips `prepack` (the build) when the caller has just built everything.
 * @returns {Map<string, string>} package name → tarball path
 */
export function packAll(dest, { ignoreScripts = false } = {}) {
  const packages = publishablePackages()
  const pnpm = join(root, 'node_modules', '.bin', 'pnpm')
  const filters = packages.flatMap((p) => ['--filter', p.name])
  // Without a coverage run's NODE_V8_COVERAGE: pnpm (and a prepack build) runs no package's code.
  const { NODE_V8_COVERAGE: _coverage, ...env } = process.env
  execFileSync(pnpm, ['-r', ...filters, 'pack', '--pack-destination', dest], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...env, npm_config_ignore_scripts: ignoreScripts ? 'true' : 'false' },
  })
  const files = readdirSync(dest)
  const tarballs = new Map()
  for (const p of packages) {
    const file = `${p.name.slice(1).replace('/', '-')}-${p.version}.tgz`
    if (!files.includes(file)) throw new Error(`pnpm pack wrote no ${file} for ${p.name}`)
    tarballs.set(p.name, join(dest, file))
  }
  return tarballs
}

/** The package and every @trivium/* package it depends on, transitively. */
export function closure(name) {
  const byName = new Map(publishablePackages().map((p) => [p.name, p]))
  const seen = new Set()
  const visit = (n) => {
    if (seen.has(n)) return
    const p = byName.get(n)
    if (!p) throw new Error(`${n} is not a publishable workspace package`)
    seen.add(n)
    for (const d of p.dependencies) visit(d)
  }
  visit(name)
  return [...seen]
}
