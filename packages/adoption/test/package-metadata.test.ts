// What npm shows and what a release publishes: metadata, LICENSE, README header and links, the prepack
// build, and the first release keeping the version in package.json (issue 14 item 7 and 12).
import { execFileSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { publishablePackages, root } from '../../../scripts/pack.mjs'

const REPO = 'https://github.com/trivium-dev/trivium'
const packages = publishablePackages()
// The tools below (changesets, npm pack and its prepack build) run no package's code: a coverage run's
// NODE_V8_COVERAGE would only make them slower.
const { NODE_V8_COVERAGE: _coverage, ...toolEnv } = process.env

t.test('every publishable package has npm metadata pointing at the repository', async (t) => {
  t.ok(packages.length >= 14, `${packages.length} publishable packages`)
  for (const p of packages) {
    const pkg = JSON.parse(readFileSync(join(p.dir, 'package.json'), 'utf8'))
    const dir = p.dir.slice(root.length + 1)
    t.equal(pkg.license, 'MIT', `${p.name} license`)
    t.same(pkg.repository, { type: 'git', url: `git+${REPO}.git`, directory: dir }, `${p.name} repository`)
    t.equal(pkg.homepage, `${REPO}/tree/main/${dir}#readme`, `${p.name} homepage`)
    t.same(pkg.bugs, { url: `${REPO}/issues` }, `${p.name} bugs`)
    t.match(
      pkg.scripts.prepack,
      // tsc after deleting dist, or the shared bundling build with --clean (docs/DEVELOPING.md, "Build"; then
      // its extra entry files); then, at most, one post-build step of the package's own (contract's
      // optional-peer-types.mjs)
      /(rmSync\('dist'.*&& tsc -p tsconfig\.build\.json|^node \.\.\/\.\.\/scripts\/build-package\.mjs --clean( src\/[\w/-]+\.ts)*)( && node scripts\/[\w-]+\.mjs)?$/,
      `${p.name} prepack builds clean`,
    )
    for (const f of ['README.md', 'LICENSE', 'CHANGELOG.md']) {
      t.ok(pkg.files.includes(f), `${p.name} files lists ${f}`)
      t.ok(existsSync(join(p.dir, f)), `${p.name} has ${f}`)
    }
    t.match(readFileSync(join(p.dir, 'LICENSE'), 'utf8'), /^MIT License\n/, `${p.name} LICENSE is MIT`)
  }
})

t.test(
  'every package README states install, first version, ESM only, Node >= 20.19, with links that work on npm',
  async (t) => {
    for (const p of packages) {
      const md = readFileSync(join(p.dir, 'README.md'), 'utf8')
      t.match(md, /\n## Install\n\n```sh\n(npm install|pnpm add) /, `${p.name} README has Install`)
      t.match(
        md,
        /First version: \d+\.\d+\.\d+\. \*\*ESM only\*\* \(`import`; there is no CommonJS build\), \*\*Node >= 20\.19\*\*/,
        `${p.name} README header`,
      )
      const relative = [...md.matchAll(/\]\(([^)]+)\)/g)]
        .map((m) => m[1] ?? '')
        .filter((href) => !/^(https:\/\/|#)/.test(href))
      t.same(
        relative,
        [],
        `${p.name} README has no relative link (npm shows the README without the repository)`,
      )
    }
  },
)

// Issue 33 item 5: `moduleResolution: node10` ignores `exports`; typesVersions maps each subpath to the
// same types (packages/adoption/test/adoption.test.ts compiles a node10 consumer against them).
t.test('every subpath export has its types in typesVersions, for node10 resolution', async (t) => {
  for (const p of packages) {
    const pkg = JSON.parse(readFileSync(join(p.dir, 'package.json'), 'utf8')) as {
      exports: Record<string, { types?: string }>
      typesVersions?: Record<string, Record<string, string[]>>
    }
    const subpaths = Object.entries(pkg.exports).filter(([k]) => k !== '.' && k !== './package.json')
    const expected =
      subpaths.length === 0
        ? undefined
        : { '*': Object.fromEntries(subpaths.map(([k, v]) => [k.slice(2), [v.types]])) }
    t.same(pkg.typesVersions, expected, `${p.name}: typesVersions`)
  }
})

t.test(
  'the first release publishes the versions in package.json: `changeset version` bumps nothing',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'trivium-changeset-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    // a copy of the workspace as changesets sees it: manifests, workspace file, .changeset
    for (const f of ['package.json', 'pnpm-workspace.yaml']) cpSync(join(root, f), join(dir, f))
    cpSync(join(root, '.changeset'), join(dir, '.changeset'), { recursive: true })
    for (const top of ['packages', 'apps']) {
      for (const name of readdirSync(join(root, top))) {
        const manifest = join(root, top, name, 'package.json')
        if (!existsSync(manifest)) continue
        mkdirSync(join(dir, top, name), { recursive: true })
        cpSync(manifest, join(dir, top, name, 'package.json'))
      }
    }
    mkdirSync(join(dir, 'bench'))
    cpSync(join(root, 'bench', 'package.json'), join(dir, 'bench', 'package.json'))
    execFileSync(join(root, 'node_modules', '.bin', 'changeset'), ['version'], {
      cwd: dir,
      stdio: 'pipe',
      env: toolEnv,
    })
    for (const p of packages) {
      const after = JSON.parse(readFileSync(join(dir, p.dir.slice(root.length + 1), 'package.json'), 'utf8'))
      t.equal(after.version, p.version, `${p.name} stays ${p.version}`)
    }
  },
)

t.test('`prepack` builds: packing a package from a clone without dist gives a full tarball', async (t) => {
  // @trivium/wire has no dependency, so a copy of it beside tsconfig.base.json and the shared build script
  // (scripts/build-package.mjs) is a clean clone in small
  const dir = mkdtempSync(join(tmpdir(), 'trivium-prepack-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const wire = join(root, 'packages', 'wire')
  const copy = join(dir, 'packages', 'wire')
  mkdirSync(copy, { recursive: true })
  for (const f of ['package.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'src']) {
    if (existsSync(join(wire, f))) cpSync(join(wire, f), join(copy, f), { recursive: true })
  }
  cpSync(join(root, 'tsconfig.base.json'), join(dir, 'tsconfig.base.json'))
  mkdirSync(join(dir, 'scripts'))
  cpSync(join(root, 'scripts', 'build-package.mjs'), join(dir, 'scripts', 'build-package.mjs'))
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules')) // tsc and esbuild, found from scripts/
  t.notOk(existsSync(join(copy, 'dist')), 'no dist before packing')
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: copy,
    encoding: 'utf8',
    env: toolEnv,
  })
  const json = out.slice(out.indexOf('['))
  const files = (JSON.parse(json)[0].files as { path: string }[]).map((f) => f.path)
  for (const f of [
    'package.json',
    'README.md',
    'LICENSE',
    'CHANGELOG.md',
    'dist/index.js',
    'dist/index.d.ts',
    'src/index.ts',
  ]) {
    t.ok(files.includes(f), `tarball holds ${f}`)
  }
  t.notOk(files.includes('dist/.tsbuildinfo'), 'no build info in the tarball')
})
