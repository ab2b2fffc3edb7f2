// Runs the README's idempotency example as written (on a random port; issue 40 item 11: it used to need
// @trivium/auth) and sends its curl lines, checking each answer the README prints: status, the headers shown, body.
import t from 'tap'
import { answersAsPrinted, exchanges, request, startReadmeExample } from './readme-example.ts'

t.test('the README idempotency example answers its curl lines as printed', async (t) => {
  const { port, shell } = await startReadmeExample(
    t,
    'packages/core/README.md',
    'packages/core/test/readme-idempotency.test.ts',
  )
  const steps = exchanges(shell)
  t.equal(steps.length, 3, 'a first call, its replay, the same key with another body')
  await answersAsPrinted(t, port, steps)
  t.equal(steps[0]?.headers['idempotent-replayed'], undefined, 'the first answer is not a replay')
  const first = await fetch(`http://127.0.0.1:${port}/orders`, request(steps[0]?.command ?? '').init)
  t.equal(first.headers.get('idempotent-replayed'), 'true', 'every later retry of the first body is')
})
