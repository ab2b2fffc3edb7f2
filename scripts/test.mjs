#!/usr/bin/env node
// Runs every package's tests in one tap run and ends with the plain summary line CI reads:
// "N passed, N failed". Extra arguments are passed to tap (e.g. a file list). First it brings what the tests
// need (scripts/environment.mjs).
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { prepare } from './environment.mjs'

const args = process.argv.slice(2)
// `--matrix`: only the version matrix run (below), e.g. to try a Fastify release.
const matrixOnly = args.length === 1 && args[0] === '--matrix'
function testFiles(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  )
}
const files =
  args.length > 0 && !matrixOnly
    ? args
    : ['packages', 'apps']
        .flatMap((root) => (existsSync(root) ? readdirSync(root).map((p) => join(root, p, 'test')) : []))
        .concat('scripts/test')
        .flatMap(testFiles)
        .sort()
if (files.length === 0) {
  console.error('no test files found')
  process.exit(1)
}

// A fresh machine: start the databases, install the browser (one line says what happened).
console.log(await prepare())

// The version matrix: the tests that depend on how Fastify and ws behave run again against the oldest Fastify the
// peer ranges allow (the root devDependency `fastify-oldest`, swapped in by scripts/matrix/fastify-version.mjs); the
// main run has the newest 5.x and the newest ws. With the whole suite (no file list) or alone (`--matrix`).
const matrixFiles = [
  'scripts/test/fastify-version.test.ts',
  'packages/tcp/test/inject-equivalence.test.ts',
  'packages/core/test/framework-errors.test.ts',
  'packages/protections/test/security-headers.test.ts',
  'packages/auth/test/plain-routes.test.ts',
  'packages/websocket/test/framing.test.ts',
]
const oldest = JSON.parse(readFileSync('package.json', 'utf8')).devDependencies['fastify-oldest'].replace(
  'npm:',
  '',
)

const runs = matrixOnly ? [] : [{ label: '', files, args: [], env: {} }]
if (args.length === 0 || matrixOnly)
  runs.push({
    label: `[${oldest}] `,
    files: matrixFiles,
    // (a --node-arg given here replaces the list in .taprc: tsx is named again)
    args: ['--node-arg=--import=tsx', '--node-arg=--import=./scripts/matrix/fastify-version.mjs'],
    env: { TRIVIUM_FASTIFY: 'oldest' },
  })

let passed = 0
let failed = 0
const failures = []
let exitCode = 0
for (const run of runs) {
  if (run.label) console.log(`\nversion matrix: ${run.files.length} files against ${oldest}`)
  const result = await tap(run)
  passed += result.passed
  failed += result.failed
  failures.push(...result.failures.map((f) => run.label + f))
  exitCode ||= result.code
}
if (failures.length > 0) console.log(`failed:\n${failures.map((f) => `  ${f}`).join('\n')}`)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed > 0 ? exitCode || 1 : exitCode)

/** One tap run; its counts and its failures, each named with the subtests it sits in. */
function tap({ files, args, env }) {
  const child = spawn('node_modules/.bin/tap', [...args, ...files], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, FORCE_COLOR: '0', ...env },
  })
  let tail = ''
  // CI keeps only the end of the output: the failures are named again there, each with the subtests it sits in.
  const failures = []
  const subtests = []
  let partial = ''
  // Each file's own result line (`ok N - <file>` at the top level): a file without one timed out or never
  // ran, and tap may report that under another name (`timeout!`), so it is named here by its path.
  const reported = new Set()
  function readLine(line) {
    const fileResult = /^(?:not )?ok \d+ - (\S+\.test\.ts)\b/.exec(line)
    if (fileResult) reported.add(fileResult[1])
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line)
    if (subtest) {
      const depth = subtest[1].length / 4
      subtests.length = depth
      subtests[depth] = subtest[2]
      return
    }
    const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(line)
    if (notOk && !/# TODO|# SKIP/.test(notOk[2])) {
      const depth = notOk[1].length / 4
      const title = notOk[2].replace(/ # time=[\d.]+m?s$/, '')
      const path = subtests.slice(0, depth + 1)
      // A subtest's own result line (at its "# Subtest:" depth, with its title) after failures inside it
      // repeats them; alone (a timeout, a throw) it is the failure.
      const own = path[depth] === title
      const name = own ? path.join(' > ') : path.concat(title).join(' > ')
      if (!own || !failures.some((f) => f.startsWith(`${name} > `))) failures.push(name)
    }
  }
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk)
    const text = chunk.toString()
    tail = (tail + text).slice(-4096)
    const lines = (partial + text).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) readLine(line)
  })
  return new Promise((resolve) => {
    child.on('close', (code) => {
      const match = /# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/.exec(tail)
      let passed = 0
      let failed = 0
      if (match) {
        passed = Number(match[2] ?? 0)
        failed = Number(match[3] ?? 0)
        if (code !== 0 && failed === 0) failed = 1
      } else {
        failed = 1
      }
      for (const file of files.filter((f) => f.endsWith('.test.ts'))) {
        if (reported.has(file)) continue
        failures.push(`${file}: no result (it timed out or never ran)`)
        failed++
      }
      resolve({ passed, failed, failures, code: code ?? 1 })
    })
  })
}
