// The ioredis matrix (issue 40 item 10): @trivium/redis-bus takes ioredis as a peer, `^5.3.0 || ^6.0.0` (5.3.0 is the
// first 5.x with the named `Redis` export it imports), and the test command runs its tests again with
// TRIVIUM_IOREDIS=oldest and scripts/matrix/ioredis-version.mjs, which must really swap ioredis for that floor.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')
const hook = join(root, 'scripts', 'matrix', 'ioredis-version.mjs')
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'))
const oldest = /^npm:ioredis@(\d+\.\d+\.\d+)$/.exec(
  readJson('package.json').devDependencies['ioredis-oldest'],
)?.[1]
const newest = readJson('packages/redis-bus/node_modules/ioredis/package.json').version

/** The version of the ioredis that `import('ioredis')` gives a module in packages/redis-bus, and its `Redis` export. */
function ioredisFrom(env: Record<string, string>) {
  const script = `import { readFileSync } from 'node:fs'
    const { Redis } = await import('ioredis')
    const { version } = JSON.parse(readFileSync(new URL(import.meta.resolve('ioredis/package.json')), 'utf8'))
    process.stdout.write(JSON.stringify({ version, redis: typeof Redis }))`
  const out = execFileSync(process.execPath, [`--import=${hook}`, '--input-type=module', '-e', script], {
    cwd: join(root, 'packages', 'redis-bus'),
    env: { ...process.env, TRIVIUM_IOREDIS: '', ...env },
    encoding: 'utf8',
  })
  return JSON.parse(out) as { version: string; redis: string }
}

t.test(
  "redis-bus's peer range starts at the oldest ioredis the matrix tests; auth's range holds it",
  async (t) => {
    t.equal(readJson('packages/redis-bus/package.json').peerDependencies.ioredis, `^${oldest} || ^6.0.0`)
    t.equal(readJson('packages/redis-bus/package.json').dependencies.ioredis, undefined, 'not a dependency')
    t.match(readJson('packages/auth/package.json').peerDependencies.ioredis, /^\^5\.\d+\.\d+ \|\| \^6\.0\.0$/)
  },
)

t.test('TRIVIUM_IOREDIS=oldest swaps the version; without it the newest stays', async (t) => {
  t.not(oldest, newest, 'two different versions are installed')
  t.same(ioredisFrom({ TRIVIUM_IOREDIS: 'oldest' }), { version: oldest, redis: 'function' })
  t.same(ioredisFrom({}), { version: newest, redis: 'function' })
})

t.test(
  'the matrix run itself imports the oldest',
  { skip: process.env.TRIVIUM_IOREDIS !== 'oldest' && 'only in the matrix run' },
  async (t) => {
    const specifier = 'ioredis/package.json' // resolved by the loader: the repository root has no ioredis of its own
    const { default: manifest } = await import(specifier, { with: { type: 'json' } })
    t.equal(manifest.version, oldest)
  },
)
