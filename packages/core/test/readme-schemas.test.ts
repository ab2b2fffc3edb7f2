// Runs the README's "Models from the schemas you write" example as written (on a random port) and sends its
// curl lines, checking each answer the README prints (the request id, which varies, left out).
import t from 'tap'
import { answersAsPrinted, exchanges, startReadmeExample } from './readme-example.ts'

t.test('the README schemas example answers its curl lines as printed', async (t) => {
  const readme = 'packages/core/README.md'
  const { port, shell } = await startReadmeExample(t, readme, 'packages/core/test/readme-schemas.test.ts')
  const steps = exchanges(shell)
  t.equal(steps.length, 3, 'a TypeBox call, its refusal, a Zod refusal')
  await answersAsPrinted(t, port, steps, ['requestId'])
})
