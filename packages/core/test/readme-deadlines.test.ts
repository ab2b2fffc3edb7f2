// Runs the README's Deadlines example as written (on a random port) and checks the answers the README
// shows for its two curl commands.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import ts from 'typescript'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const section = readme.slice(readme.indexOf('### Deadlines'))
const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
const shell = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''

t.test('the README deadline example answers as the README says', async (t) => {
  t.match(code, /app\.listen\(\{ port: 3000 \}\)/)
  const runnable = `${code.replace('app.listen({ port: 3000 })', "app.listen({ port: 0, host: '127.0.0.1' })")}\nexport { app }\n`
  const js = ts.transpileModule(runnable, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  const dir = mkdtempSync(join(new URL('.', import.meta.url).pathname, '.readme-deadlines-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'example.mjs')
  writeFileSync(file, js)
  const { app } = await import(pathToFileURL(file).href)
  t.teardown(() => app.close())
  const { port } = app.server.address()

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
