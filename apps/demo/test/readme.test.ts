// The README's code blocks, run as written where they can be (issue 33): the 30-second example is started
// as a service of its own and its curl lines are sent (with fetch) and answered as printed; every
// environment variable the READMEs' tables list is one the demo reads, and every one it reads is listed.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import ts from 'typescript'
import { waitBound } from '../../../scripts/test/waits.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const demo = fileURLToPath(new URL('../', import.meta.url))
const README = readFileSync(`${root}README.md`, 'utf8')

/** The fenced blocks of a section (`## title` up to the next `## `). */
function blocks(markdown: string, section: string): { lang: string; code: string }[] {
  const start = markdown.indexOf(`\n## ${section}\n`)
  const end = markdown.indexOf('\n## ', start + 1)
  const text = markdown.slice(start, end === -1 ? undefined : end)
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] ?? '',
    code: m[2] ?? '',
  }))
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  await new Promise((r) => server.close(r))
  return port
}

/** `curl -s -XPOST localhost:3000/path -H 'k: v' -d '{…}'` as a fetch on another port. */
function curlToFetch(line: string, port: number): Promise<Response> {
  const words = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '')
  let method = 'GET'
  let url = ''
  const headers: Record<string, string> = {}
  let body: string | undefined
  for (let i = 1; i < words.length; i++) {
    const word = words[i] as string
    if (word === '-s') continue
    else if (word.startsWith('-X')) method = word.slice(2)
    else if (word === '-H') {
      const [name, ...value] = (words[++i] as string).split(':')
      headers[name as string] = value.join(':').trim()
    } else if (word === '-d') body = words[++i]
    else url = word.replace(/^localhost:3000/, `http://127.0.0.1:${port}`)
  }
  return fetch(url, { method, headers, body })
}

t.test('the 30-second example runs as written and answers its curl lines as printed', async (t) => {
  const [example, session] = blocks(README, '30-second example')
  t.equal(example?.lang, 'ts')
  t.equal(session?.lang, 'sh')
  const port = await freePort()
  t.match(example?.code, /await app\.listen\(\{ port: 3000 \}\)/)
  const js = ts.transpileModule((example?.code ?? '').replace('port: 3000', `port: ${port}`), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText
  // Inside apps/demo, whose node_modules hold fastify and @trivium/core, as the user's project would.
  const file = `${demo}readme-example-${process.pid}.mjs`
  writeFileSync(file, js)
  t.teardown(() => rmSync(file, { force: true }))
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'ignore', 'inherit'] })
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill()
      await once(child, 'exit')
    }
  })
  const deadline = Date.now() + waitBound(60_000)
  // Waited for by connecting, not by requests: the printed request ids count from the first request.
  while (!(await accepts(port))) {
    t.equal(child.exitCode, null, 'the example is running')
    if (Date.now() > deadline) throw new Error('the example did not listen within 60 s')
    await new Promise((r) => setTimeout(r, 100))
  }
  const lines = (session?.code ?? '').trimEnd().split('\n')
  t.equal(lines.length, 4)
  for (let i = 0; i < lines.length; i += 2) {
    const command = (lines[i] as string).replace(/^\$ /, '')
    const reply = await curlToFetch(command, port)
    t.equal(await reply.text(), lines[i + 1], command)
  }
})

/** Every `VARIABLE` in the first column of the tables whose header starts `| variable`. */
function tableVariables(markdown: string): Set<string> {
  const names = new Set<string>()
  for (const table of markdown.matchAll(/^\| variable .*\n(?:\|.*\n)+/gm))
    for (const row of table[0].split('\n').slice(2))
      for (const m of (row.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1] as string)
  return names
}

t.test('the environment tables list exactly the variables the demo reads', async (t) => {
  const read = new Set<string>()
  // config.ts and http2-setting.ts: the settings; telemetry.ts: OpenTelemetry; cluster.ts: start:cluster.
  for (const source of ['config.ts', 'http2-setting.ts', 'telemetry.ts', 'cluster.ts'])
    for (const m of readFileSync(`${demo}src/${source}`, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g))
      read.add(m[1] as string)
  const listed = tableVariables(README)
  t.same([...read].filter((name) => !listed.has(name)).sort(), [], 'read but not in the README tables')
  t.same([...listed].filter((name) => !read.has(name)).sort(), [], 'in the README tables but not read')
  const demoListed = tableVariables(readFileSync(`${demo}README.md`, 'utf8'))
  t.ok(demoListed.size > 0, "the demo README's table")
  t.same(
    [...demoListed].filter((name) => !read.has(name)).sort(),
    [],
    "in the demo README's table but not read",
  )
})
