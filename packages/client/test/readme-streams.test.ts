// Runs the README's "Client and bidirectional streams" example exactly as the README says: the block, read from
// the README, saved as `example.mjs` inside this package (so its imports resolve as for a user) and run with
// `node example.mjs`; it prints what its comments say and exits by itself.
import t from 'tap'
import { runJsBlock, testedSection } from '../../../scripts/test/readme-blocks.js'

t.test('the streams example of the README runs with node as written and prints what it says', async (t) => {
  const [block] = testedSection('packages/client/README.md', 'packages/client/test/readme-streams.test.ts')
  t.equal(block?.lang, 'js', 'plain JavaScript: `node example.mjs` runs no TypeScript')
  const code = block?.code ?? ''
  t.match(code, /clientStream\('sum'\)/)
  const expected = [...code.matchAll(/^console\.log\(.*\) \/\/ (\{.*?\})/gm)].map((m) => m[1])
  t.same(expected, ['{ sum: 6 }', '{ n: 42 }', '{ value: undefined, done: true }'])
  const stdout = await runJsBlock(t, code, new URL('.', import.meta.url), 'example.mjs')
  t.same(
    stdout.trimEnd().split('\n'),
    expected,
    'printed as the comments say, then the process exited (code 0)',
  )
})
