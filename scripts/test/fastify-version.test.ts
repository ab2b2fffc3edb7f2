// The version matrix (issue 31): the test command runs the Fastify-dependent tests again with TRIVIUM_FASTIFY=oldest
// and scripts/matrix/fastify-version.mjs, which must really swap Fastify for the oldest version the peer ranges
// allow, or the matrix would test the same version twice.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')
const hook = join(root, 'scripts', 'matrix', 'fastify-version.mjs')
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'))
const oldest = /^npm:fastify@(\d+\.\d+\.\d+)$/.exec(
  readJson('package.json').devDependencies['fastify-oldest'],
)?.[1]
// The version every package resolves without the loader (the devDependency, the newest 5.x when installed)
const newest = readJson('packages/core/node_modules/fastify/package.json').version

/**
 * Which Fastify `import('fastify')` gives a module in packages/core: its package.json version (through the subpath
 * `fastify/package.json`, which the loader maps too) and what the instance reports (5.12.2 says '5.12.1').
 */
function fastifyFrom(env: Record<string, string>) {
  const script = `import { readFileSync } from 'node:fs'
    const { default: Fastify } = await import('fastify')
    const manifest = import.meta.resolve('fastify/package.json')
    const { version } = JSON.parse(readFileSync(new URL(manifest), 'utf8'))
    process.stdout.write(JSON.stringify({ version, reported: Fastify().version }))`
  const out = execFileSync(process.execPath, [`--import=${hook}`, '--input-type=module', '-e', script], {
    cwd: join(root, 'packages', 'core'),
    env: { ...process.env, TRIVIUM_FASTIFY: '', ...env },
    encoding: 'utf8',
  })
  return JSON.parse(out) as { version: string; reported: string }
}

t.test('the peer ranges start at the oldest Fastify the matrix tests', async (t) => {
  t.match(oldest, /^5\.\d+\.\d+$/)
  const ranges = readdirSync(join(root, 'packages'))
    .map((p) => [p, readJson(join('packages', p, 'package.json')).peerDependencies?.fastify])
    .filter(([, range]) => range !== undefined)
  t.ok(ranges.length >= 12, 'every plugin has the peer')
  for (const [p, range] of ranges) t.equal(range, `^${oldest}`, `${p}'s peer range`)
})

t.test('TRIVIUM_FASTIFY=oldest swaps the version; without it the newest stays', async (t) => {
  t.not(oldest, newest, 'two different versions are installed')
  const swapped = fastifyFrom({ TRIVIUM_FASTIFY: 'oldest' })
  t.equal(swapped.version, oldest)
  t.not(swapped.reported, newest, 'the instance is not the newest')
  t.same(fastifyFrom({}), { version: newest, reported: newest })
})

t.test(
  'the matrix run itself imports the oldest',
  { skip: process.env.TRIVIUM_FASTIFY !== 'oldest' && 'only in the matrix run' },
  async (t) => {
    const specifier = 'fastify' // resolved by the loader only: the repository root has no fastify of its own
    const { default: Fastify } = await import(specifier)
    const { default: manifest } = await import(`${specifier}/package.json`, { with: { type: 'json' } })
    t.equal(manifest.version, oldest)
    t.not(Fastify().version, newest)
  },
)
