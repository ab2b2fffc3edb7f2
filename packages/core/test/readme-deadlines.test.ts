// Runs the README's Deadlines example as written (on a random port) and checks the answers the README
// shows for its two curl commands.
import t from 'tap'
import { startReadmeExample } from './readme-example.ts'

t.test('the README deadline example answers as the README says', async (t) => {
  const { port, shell } = await startReadmeExample(
    t,
    'packages/core/README.md',
    'packages/core/test/readme-deadlines.test.ts',
  )
  const lines = shell.split('\n')
  const commands = lines.filter((l) => l.startsWith('curl'))
  const expected = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
  t.equal(commands.length, 2)
  for (const [i, command] of commands.entries()) {
    const header = /-H 'Trivium-Timeout-Ms: (\S+)'/.exec(command)?.[1] as string
    const res = await fetch(`http://127.0.0.1:${port}/report`, { headers: { 'trivium-timeout-ms': header } })
    const body = await res.json()
    t.equal(res.status, expected[i].statusCode)
    t.same({ ...body, requestId: 'x' }, { ...expected[i], requestId: 'x' }, command)
  }
})
