// Runs the README's "Client and bidirectional streams" example exactly as the README says: the block, read from
// the README, saved as `example.mjs` inside this package (so its imports resolve as for a user) and run with
// `node example.mjs`; it prints what its comments say and exits by itself.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { testedSection } from '../../../scripts/test/readme-blocks.js'
import { waitBound } from '../../../scripts/test/waits.js'

const run = promisify(execFile)
// tsx and tap preload hooks through NODE_OPTIONS: the example runs in a plain Node process, as a user's
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|TAP|_TAPJS)/.test(k)),
)

t.test('the streams example of the README runs with node as written and prints what it says', async (t) => {
  const [block] = testedSection('packages/client/README.md', 'packages/client/test/readme-streams.test.ts')
  t.equal(block?.lang, 'js', 'plain JavaScript: `node example.mjs` runs no TypeScript')
  const code = block?.code ?? ''
  t.match(code, /clientStream\('sum'\)/)
  const expected = [...code.matchAll(/^console\.log\(.*\) \/\/ (\{.*?\})/gm)].map((m) => m[1])
  t.same(expected, ['{ sum: 6 }', '{ n: 42 }', '{ value: undefined, done: true }'])
  const dir = mkdtempSync(join(import.meta.dirname, '.readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'example.mjs'), code)
  const { stdout } = await run(process.execPath, ['example.mjs'], {
    cwd: dir,
    env,
    timeout: waitBound(5_000),
  })
  t.same(
    stdout.trimEnd().split('\n'),
    expected,
    'printed as the comments say, then the process exited (code 0)',
  )
})
