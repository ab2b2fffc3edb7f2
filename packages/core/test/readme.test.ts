// Runs the README's 30-second example as written (on a random port) and checks the answers the
// README shows, so the front page cannot rot.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
const section = readme.slice(readme.indexOf('## 30-second example'))
const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
const shell = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''

t.test('the README example answers as the README says', async (t) => {
  t.match(code, /app\.listen\(\{ port: 3000 \}\)/)
  const runnable = `${code.replace('app.listen({ port: 3000 })', "app.listen({ port: 0, host: '127.0.0.1' })")}\nexport { app }\n`
  const js = ts.transpileModule(runnable, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  // Written inside this package so that `fastify` and `@trivium/core` resolve as they do for users.
  const dir = mkdtempSync(join(new URL('.', import.meta.url).pathname, '.readme-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'example.mjs')
  writeFileSync(file, js)
  const { app } = await import(pathToFileURL(file).href)
  t.teardown(() => app.close())
  const { port } = app.server.address()

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
