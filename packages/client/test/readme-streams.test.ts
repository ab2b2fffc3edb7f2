// Runs the README's "Client and bidirectional streams" example as written and checks that it prints
// what its comments say, so the example stays runnable.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import ts from 'typescript'

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
  const js = ts.transpileModule(runnable, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  // Written inside this package so that its dependencies resolve as they do for users.
  const dir = mkdtempSync(join(new URL('.', import.meta.url).pathname, '.readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'example.mjs')
  writeFileSync(file, js)
  await import(pathToFileURL(file).href)
  t.same(printed, [{ sum: 6 }, { n: 42 }, { done: true, value: undefined }])
})
