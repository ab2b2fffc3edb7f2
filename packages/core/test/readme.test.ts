// Runs the README's 30-second example as written (on a random port) and checks the answers the
// README shows, so the front page cannot rot.
import t from 'tap'
import { startReadmeExample } from './readme-example.ts'

t.test('the README example answers as the README says', async (t) => {
  const { port, shell } = await startReadmeExample(t, 'README.md', 'packages/core/test/readme.test.ts')
  const expected = shell
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
  const post = (body: string) =>
    fetch(`http://127.0.0.1:${port}/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
  const ok = await post('{"title":"ship it"}')
  t.equal(ok.status, 201)
  t.same(await ok.json(), expected[0])
  const bad = await post('{}')
  t.equal(bad.status, 400)
  t.same(await bad.json(), expected[1])
})
