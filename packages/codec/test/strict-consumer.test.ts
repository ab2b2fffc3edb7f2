// Issue 14 item 8: generated code compiles in a consumer's strictest settings — `strict`,
// `noUncheckedIndexedAccess`, `exactOptionalPropertyTypes`, skipLibCheck off (test/tsconfig.strict.json
// over the committed generated files, the custom type and the typing tests).
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')

t.test(
  'generated code type-checks under strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes',
  async (t) => {
    const tsc = join(pkg, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc')
    const r = spawnSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.strict.json')], {
      encoding: 'utf8',
      cwd: pkg,
    })
    t.equal(r.stdout + r.stderr, '')
    t.equal(r.status, 0)
  },
)
