// Runs the README's Deadlines example exactly as the README says (issue 40 item 11: it had no `endpoints`, so it
// rejected with NotFoundException): @trivium/core's Deadlines example is started from its README (on a random port
// instead of 3000), and the client block, read from this README, is saved as `deadline.mjs` inside this package and
// run with `node deadline.mjs`, its URL pointed at that port; it prints what its comment says and exits by itself
// (the old example printed nothing: its NotFoundException is not a TimeoutException).
import t from 'tap'
import { runJsBlock, testedSection } from '../../../scripts/test/readme-blocks.js'
import { startReadmeExample } from '../../core/test/readme-example.js'

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
  const pointed = code.replace("'http://localhost:3000'", `'http://127.0.0.1:${server.port}'`)
  const stdout = await runJsBlock(t, pointed, new URL('.', import.meta.url), 'deadline.mjs')
  t.equal(stdout, `${printed}\n`, 'printed as the comment says, then the process exited (code 0)')
})
