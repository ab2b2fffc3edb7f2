// Issue 45 part 1: the demo's schema keeps the evolution rule against its last release
// (`schema/released-0.1.0.json`), checked as a user's CI would: `trivium-codegen check`.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const CLI = fileURLToPath(new URL('../../../packages/codec/dist/cli.js', import.meta.url))
const SCHEMA = fileURLToPath(new URL('../schema/trivium.json', import.meta.url))
const RELEASED = fileURLToPath(new URL('../schema/released-0.1.0.json', import.meta.url))

t.test('schema/trivium.json is compatible with the released 0.1.0 schema', async (t) => {
  const run = spawnSync(process.execPath, [CLI, 'check', SCHEMA, '--against', RELEASED], { encoding: 'utf8' })
  t.equal(run.stderr, '')
  t.equal(run.stdout, 'compatible (wire+json)\n')
  t.equal(run.status, 0)
})
