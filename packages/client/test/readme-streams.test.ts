// Runs the README's "Client and bidirectional streams" example as written and checks that it prints
// what its comments say, so the example stays runnable.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { importSnippet } from '../../../scripts/test/import-snippet.js'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const section = readme.slice(readme.indexOf('## Client and bidirectional streams'))
const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ''

t.test('the streams example of the README runs and prints what it says', async (t) => {
  t.match(code, /clientStream\('sum'\)/)
  const printed: unknown[] = []
  ;(globalThis as Record<string, unknown>).__readmePrint = (value: unknown) => printed.push(value)
  t.teardown(() => {
    delete (globalThis as Record<string, unknown>).__readmePrint
  })
  const runnable = `${code.replaceAll('console.log(', '__readmePrint(')}\ndeclare const __readmePrint: (value: unknown) => void\nexport {}\n`
  // Imported from inside this package, so that its dependencies resolve as they do for users.
  await importSnippet(t, runnable, new URL('.', import.meta.url))
  t.same(printed, [{ sum: 6 }, { n: 42 }, { done: true, value: undefined }])
})
