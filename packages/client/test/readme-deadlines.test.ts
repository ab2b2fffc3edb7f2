// Runs the README's Deadlines example exactly as the README says (issue 40 item 11: it had no `endpoints`, so it
// rejected with NotFoundException): @trivium/core's Deadlines example is started from its README (on a random port
// instead of 3000), and the client block, read from this README, is saved as `deadline.mjs` inside this package and
// run with `node deadline.mjs`, its URL pointed at that port; it prints what its comment says and exits by itself
// (the old example printed nothing: its NotFoundException is not a TimeoutException).
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { testedSection } from '../../../scripts/test/readme-blocks.js'
import { waitBound } from '../../../scripts/test/waits.js'
import { startReadmeExample } from '../../core/test/readme-example.js'

const run = promisify(execFile)
// tsx and tap preload hooks through NODE_OPTIONS: the example runs in a plain Node process, as a user's
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|TAP|_TAPJS)/.test(k)),
)

t.test("the client's deadline example reaches core's example server and prints TRV_TIMEOUT", async (t) => {
  const [block] = testedSection('packages/client/README.md', 'packages/client/test/readme-deadlines.test.ts')
  t.equal(block?.lang, 'js', 'plain JavaScript: `node deadline.mjs` runs no TypeScript')
  const code = block?.code ?? ''
  t.match(code, "url: 'http://localhost:3000'", 'written for the server on port 3000')
  const printed = /console\.log\(err\.code\) \/\/ (\S+)/.exec(code)?.[1]
  t.equal(printed, 'TRV_TIMEOUT')

  const server = await startReadmeExample(
    t,
    'packages/core/README.md',
    'packages/core/test/readme-deadlines.test.ts',
  )
  const dir = mkdtempSync(join(import.meta.dirname, '.readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(
    join(dir, 'deadline.mjs'),
    code.replace("'http://localhost:3000'", `'http://127.0.0.1:${server.port}'`),
  )
  const { stdout } = await run(process.execPath, ['deadline.mjs'], {
    cwd: dir,
    env,
    timeout: waitBound(5_000),
  })
  t.equal(stdout, `${printed}\n`, 'printed as the comment says, then the process exited (code 0)')
})
