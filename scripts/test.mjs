#!/usr/bin/env node
// Runs every package's tests and ends with the plain summary line CI reads: "N passed, N failed". Arguments
// are a file list (default: every test file), `--coverage`, `--typecheck` (below). First it brings what the tests
// need (scripts/environment.mjs).
//
// A tap test file is a Node program that prints TAP, so each runs as `node --import=<scripts/ts/register.mjs>
// <file>` (TSX below), three at a time, rather than under tap's runner: the runner loads @tapjs/processinfo's module hooks into every test
// process and, through NODE_OPTIONS, into every Node process a test starts (a demo instance, npm), which cost
// ~1–2 s of CPU per demo test file and ~2 s per demo instance started, about a sixth of the suite's CPU time.
// `npx tap <file>` still runs a file under tap's runner (.taprc).
import { spawn } from 'node:child_process'
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs'
import { constants as osConstants, tmpdir } from 'node:os'
import { join } from 'node:path'
import { coverageWanted, finishCoverage, pruneCoverage, startCoverage } from './coverage.mjs'
import { prepare } from './environment.mjs'

/**
 * Files run at once. Two kept 2 cores ~80 % busy (many files wait on a restart, a failover, a timer); a third
 * fills those gaps. At load 15 a third file is one more runnable process among ~17, so it barely slows the others.
 */
const JOBS = positive('TRIVIUM_TEST_JOBS', 3)
/** tap ends a file after this long (TAP_TIMEOUT), naming the subtests then running. */
const FILE_TIMEOUT_S = positive('TRIVIUM_TEST_FILE_TIMEOUT_S', 900)
/**
 * Scratch space for the test processes (their `TMPDIR`, so `os.tmpdir()` in them and in every process they
 * start): a folder in /dev/shm when that is a writable tmpfs and TMPDIR is not set. Each demo test copies a
 * 39 MB, ~1,000-file PGlite data folder and deletes it again, and PGlite fsyncs its writes; on a disk that
 * was ~1–4 s of system time per demo started under load, on tmpfs a fraction of it. Set TMPDIR to choose.
 */
const SCRATCH = process.env.TMPDIR ?? memoryScratch()
/** How many files the end-of-run table lists, slowest (by CPU time) first; 0 for none. */
const TOP = process.env.TRIVIUM_TEST_TOP === '0' ? 0 : positive('TRIVIUM_TEST_TOP', 15)
/**
 * GNU time, when present: each file runs under it, so the run can say what CPU time (user + system) each file
 * and every process it waited for (a demo instance, npm, a browser) took. On a loaded machine wall time says
 * little; CPU time is what a file costs the others.
 */
const TIME = executable('/usr/bin/time')
/** Where each file's last CPU and wall time are kept (for the next run's order, and to read). */
const TIMES_FILE = join('node_modules', '.cache', 'trivium-test-times.json')
/**
 * A fresh clone has no TIMES_FILE, so its files would run in name order; this committed copy of one idle run's
 * TIMES_FILE, when present, orders them instead (refresh it by copying TIMES_FILE after a whole idle run).
 */
const TIMES_SEED = join('scripts', 'test-times.json')
/** Files started so far (names each one's GNU time record). */
let timedFiles = 0
/**
 * TypeScript through scripts/ts/register.mjs (esbuild with tsx's options, no type check: that is `pnpm typecheck`),
 * not tsx itself, whose hooks cost ~0.4 s of CPU more to start in each of the ~260 test processes and ~1 s more
 * where a file loads the demo (scripts/ts/hooks.mjs). An absolute path: a test that starts Node with its own
 * `process.execArgv` from another folder loads it too. `--liftoff-only`: WebAssembly
 * (PGlite, the embedded PostgreSQL of the demo and @trivium/sql's tests) runs on V8's baseline compiler only,
 * never optimised by TurboFan, whose compiling of PGlite's hot functions cost more CPU than a test file's
 * queries win back (CPU time of a file, load ~35: demo http.test.ts 9.5 / 10.5 s → 8.7 / 9.0 s, demo
 * idempotency.test.ts 7.8 → 6.3 s, sql pglite.test.ts 25.3 → 22.8 s). Not a setting of the code under test.
 */
const TSX = [`--import=${new URL('./ts/register.mjs', import.meta.url).href}`, '--liftoff-only']

/** `/dev/shm/trivium-tests-<uid>` when /dev/shm is a writable tmpfs, else the usual temporary folder. */
function memoryScratch() {
  const TMPFS_MAGIC = 0x01021994
  try {
    if (statfsSync('/dev/shm').type !== TMPFS_MAGIC) return tmpdir()
    accessSync('/dev/shm', constants.W_OK)
    const dir = join('/dev/shm', `trivium-tests-${process.getuid?.() ?? 'user'}`)
    mkdirSync(dir, { recursive: true })
    // As /tmp: tests run servers as other users (a private PostgreSQL runs as `postgres`) in folders here.
    chmodSync(dir, 0o1777)
    return dir
  } catch {
    return tmpdir()
  }
}

function executable(path) {
  try {
    accessSync(path, constants.X_OK)
    return path
  } catch {
    return undefined
  }
}

/** A setting from the environment that must be a positive integer; the run stops naming it otherwise. */
function positive(name, fallback) {
  const value = process.env[name] === undefined ? fallback : Number(process.env[name])
  if (Number.isSafeInteger(value) && value > 0) return value
  console.error(`${name} must be a positive integer (got ${process.env[name]})`)
  process.exit(2)
}

// `--coverage` (or TRIVIUM_COVERAGE=1, or CI=true): line coverage of the packages' sources (scripts/coverage.mjs).
const coverage = coverageWanted(process.argv.slice(2))
// `--typecheck`: `tsc -p tsconfig.test.json` (`pnpm typecheck`) runs beside the first test files (`pnpm test`).
const typecheck = process.argv.includes('--typecheck')
const args = process.argv.slice(2).filter((arg) => arg !== '--coverage' && arg !== '--typecheck')
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
  // cors routes: 'all' leaves earlier OPTIONS routes to themselves: a hook Fastify gives earlier routes, request.is404.
  'packages/protections/test/cors-options-routes.test.ts',
  'packages/auth/test/plain-routes.test.ts',
  'packages/websocket/test/framing.test.ts',
  // HTTP/2 (Fastify's http2 server creation, http2SessionTimeout, initialConfig.http2): PROTOCOL.md "HTTP/2".
  'packages/conformance/test/http2-protections.test.ts',
]
// And the redis-bus tests against the oldest ioredis its peer range allows (`ioredis-oldest`, swapped in by
// scripts/matrix/ioredis-version.mjs); the main run has ioredis 6.
const ioredisMatrixFiles = [
  'scripts/test/ioredis-version.test.ts',
  'packages/redis-bus/test/bus.test.ts',
  'packages/redis-bus/test/channel.test.ts',
  'packages/redis-bus/test/outage.test.ts',
  'packages/redis-bus/test/cluster.test.ts',
]
const devDependencies = JSON.parse(readFileSync('package.json', 'utf8')).devDependencies
const oldest = devDependencies['fastify-oldest'].replace('npm:', '')
const oldestIoredis = devDependencies['ioredis-oldest'].replace('npm:', '')

const runs = matrixOnly ? [] : [{ label: '', files, nodeArgs: TSX, env: {} }]
if (args.length === 0 || matrixOnly)
  runs.push({
    label: `[${oldest}] `,
    files: matrixFiles,
    nodeArgs: [...TSX, '--import=./scripts/matrix/fastify-version.mjs'],
    env: { TRIVIUM_FASTIFY: 'oldest' },
  })
if (args.length === 0 || matrixOnly)
  runs.push({
    label: `[${oldestIoredis}] `,
    files: ioredisMatrixFiles,
    nodeArgs: [...TSX, '--import=./scripts/matrix/ioredis-version.mjs'],
    env: { TRIVIUM_IOREDIS: 'oldest' },
  })

const coverageEnv = coverage ? startCoverage() : {}
for (const run of runs) {
  Object.assign(run.env, coverageEnv)
  if (run.label) console.log(`version matrix: ${run.files.length} files against ${run.label.slice(1, -2)}`)
}
const runStarted = Date.now()
// One queue for the main run and the matrix runs (each file with its run's loader and environment): run one after
// the other, each ended with its own tail: its last files running while a core had nothing left to start.
const result = await runFiles(
  runs.flatMap(({ label, files, nodeArgs, env }) =>
    files.map((file) => ({ file, name: label + file, nodeArgs, env })),
  ),
)
const { passed, failures, timings } = result
let failed = result.failed
if (TIME && TOP > 0) console.log(timeReport(timings, Date.now() - runStarted).join('\n'))
saveTimes(timings)
if (coverage) {
  // Floors hold for the whole suite: a file list covers only part of each package.
  const report = finishCoverage({ enforce: args.length === 0 })
  console.log(report.lines.join('\n'))
  failed += report.failures.length
  failures.push(...report.failures)
}
if (failures.length > 0) console.log(`failed:\n${failures.map((f) => `  ${f}`).join('\n')}`)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed > 0 ? 1 : 0)

/**
 * Runs each file (`{ file, name, nodeArgs, env }`: `name` is the file with its run's label) as its own
 * `node <nodeArgs> <file>` (a tap test file is a Node program that prints TAP), `JOBS` at a time, and prints each
 * file's output as one block when it ends: a `# Subtest: <name>` line, its TAP indented, then `ok N - <name>` or
 * `not ok N - <name>`. With `--typecheck`, the type check takes one of the `JOBS` places first: it is one
 * single-threaded tsc process, and before the tests it left the second core idle for its ~40 s. Its counts and
 * failures, each failure named with the subtests it sits in.
 */
async function runFiles(entries) {
  // The longest first (by the last run's wall time, kept in TIMES_FILE; a file without one counts as longest),
  // so the run does not end with one long file running alone while the other workers have nothing left.
  const last = savedTimes()
  const took = (name) => last[name]?.ms ?? Number.POSITIVE_INFINITY
  const queue = entries
    .map((entry, i) => ({ ...entry, id: i + 1 }))
    .sort((a, b) => took(b.name) - took(a.name))
  if (typecheck) queue.unshift({ check: true })
  let passed = 0
  let failed = 0
  const failures = []
  const timings = []
  console.log(`TAP version 14\n1..${entries.length}`)
  async function worker() {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const result = next.check ? await runTypecheck() : await runFile(next)
      process.stdout.write(next.check ? result.output : block(next, result))
      passed += result.passed
      failed += result.failed
      failures.push(...result.failures)
      if (!next.check) timings.push({ file: next.name, cpu: result.cpu, ms: result.ms })
      // Its processes' coverage files cut to what the report counts, while the other files run.
      if (coverage && !next.check) pruneCoverage()
    }
  }
  await Promise.all(Array.from({ length: Math.min(JOBS, queue.length) }, worker))
  console.log(`# { total: ${passed + failed}, pass: ${passed}, fail: ${failed} }`)
  return { passed, failed, failures, timings }
}

/** `tsc -p tsconfig.test.json` (`pnpm typecheck`): its errors as TAP comments, one failure if it found any. */
function runTypecheck() {
  const started = Date.now()
  const tsc = join('node_modules', 'typescript', 'bin', 'tsc')
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.test.json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (text) => {
    output += text
  })
  child.stderr.setEncoding('utf8').on('data', (text) => {
    output += text
  })
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const ok = code === 0
      const lines = output.trim() === '' ? [] : output.trimEnd().split('\n')
      const seconds = ((Date.now() - started) / 1000).toFixed(1)
      const head = `# typecheck (tsc -p tsconfig.test.json): ${ok ? 'no errors' : `exited with ${signal ?? code}`}, ${seconds} s`
      resolve({
        output: `${[head, ...lines.map((line) => `#   ${line}`)].join('\n')}\n\n`,
        passed: 0,
        failed: ok ? 0 : 1,
        failures: ok ? [] : [`typecheck: tsc -p tsconfig.test.json exited with ${signal ?? code}`],
      })
    })
  })
}

/** Each file's last time (`{ [file]: { cpu, ms } }`, from TIMES_FILE or else TIMES_SEED), or none. */
function savedTimes() {
  for (const file of [TIMES_FILE, TIMES_SEED]) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'))
    } catch {}
  }
  return {}
}

/** Adds this run's times to the saved ones. */
function saveTimes(timings) {
  const times = savedTimes()
  for (const { file, cpu, ms } of timings) times[file] = { cpu, ms }
  try {
    mkdirSync(join('node_modules', '.cache'), { recursive: true })
    writeFileSync(TIMES_FILE, `${JSON.stringify(times, null, 1)}\n`)
  } catch {}
}

/**
 * The end-of-run table: total CPU and wall time, CPU time per package (`packages/<name>`, `apps/<name>`,
 * `scripts`), and the TOP files by CPU time with their wall time.
 */
function timeReport(timings, wallMs) {
  const seconds = (s) => `${s.toFixed(1)} s`
  const total = timings.reduce((sum, t) => sum + (t.cpu ?? 0), 0)
  const byPackage = new Map()
  for (const { file, cpu } of timings) {
    const name = /^(?:\[[^\]]*\] )?((?:packages|apps)\/[^/]+|scripts)\//.exec(file)?.[1] ?? file
    const sum = byPackage.get(name) ?? { cpu: 0, files: 0 }
    sum.cpu += cpu ?? 0
    sum.files += 1
    byPackage.set(name, sum)
  }
  const packages = [...byPackage].sort((a, b) => b[1].cpu - a[1].cpu)
  const top = [...timings].sort((a, b) => (b.cpu ?? 0) - (a.cpu ?? 0)).slice(0, TOP)
  return [
    `# time: ${timings.length} files, CPU ${seconds(total)} (user + system, each file's processes), wall ${seconds(wallMs / 1000)}, ${JOBS} at a time`,
    '# CPU by package:',
    ...packages.map(([name, { cpu, files }]) => `#   ${seconds(cpu).padStart(9)}  ${name} (${files} files)`),
    `# slowest ${top.length} files by CPU (wall in brackets):`,
    ...top.map((t) => `#   ${seconds(t.cpu ?? 0).padStart(9)}  (${seconds(t.ms / 1000)})  ${t.file}`),
  ]
}

/** One file's output as a subtest of the run, its result line last. */
function block({ name, id }, { output, ok, ms, note }) {
  const body = output
    .replace(/^TAP version \d+\n/, '')
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => (line === '' ? '' : `    ${line}`))
    .join('\n')
  const extra = note ? `    # ${note}\n` : ''
  return `# Subtest: ${name}\n${body}\n${extra}${ok ? 'ok' : 'not ok'} ${id} - ${name} # time=${ms}ms\n\n`
}

/** Runs one test file; its output, its counts (the `# { total, pass, fail }` line tap prints last). */
function runFile({ file, name, nodeArgs, env }) {
  const started = Date.now()
  const timesFile = join(SCRATCH, `.test-time-${process.pid}-${++timedFiles}`)
  const command = [process.execPath, ...nodeArgs, file]
  const timed = TIME ? [TIME, '-o', timesFile, '-f', '%U %S', ...command] : command
  const child = spawn(timed[0], timed.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TMPDIR: SCRATCH, FORCE_COLOR: '0', TAP_TIMEOUT: String(FILE_TIMEOUT_S), ...env },
  })
  let output = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (text) => {
    output += text
  })
  // tap ends a file that runs past TAP_TIMEOUT itself, naming the subtests then running; this is for a
  // process that does not end even then.
  let killed = false
  const watchdog = setTimeout(
    () => {
      killed = true
      killTest(child)
    },
    (FILE_TIMEOUT_S + 60) * 1000,
  )
  return new Promise((resolve) => {
    child.on('close', (timeCode, timeSignal) => {
      clearTimeout(watchdog)
      const ms = Date.now() - started
      const { cpu, code, signal } = TIME
        ? readTimes(timesFile, timeCode, timeSignal)
        : { code: timeCode, signal: timeSignal }
      const failures = []
      const subtests = [name]
      for (const line of output.split('\n')) readLine(line, subtests, failures)
      const counts = /^# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/m.exec(output)
      let passed = Number(counts?.[2] ?? 0)
      let failed = Number(counts?.[3] ?? 0)
      let note = ''
      if (!counts || killed) {
        note = killed ? `killed after ${FILE_TIMEOUT_S + 60} s` : `exited with ${signal ?? code}`
        failures.push(`${name}: no result (${note})`)
        passed = 0
        failed = Math.max(failed, 1)
      } else if (code !== 0 && failed === 0) {
        note = `exited with ${signal ?? code} after its tests passed`
        failures.push(`${name}: ${note}`)
        failed = 1
      }
      resolve({ output, ok: failed === 0, ms, cpu, note, passed, failed, failures })
    })
  })
}

/**
 * GNU time's record of one file: CPU seconds (user + system of the test process and every child it waited for),
 * and the test process's own exit code or signal (time's own status stands for it otherwise: 128 + signal).
 */
function readTimes(timesFile, timeCode, timeSignal) {
  let lines = []
  try {
    lines = readFileSync(timesFile, 'utf8').trim().split('\n')
    rmSync(timesFile, { force: true })
  } catch {}
  const [user, system] = (lines.at(-1) ?? '').split(' ').map(Number)
  const cpu = Number.isFinite(user) && Number.isFinite(system) ? user + system : undefined
  const bySignal = /terminated by signal (\d+)/.exec(lines.join('\n'))
  if (timeSignal) return { cpu, code: null, signal: timeSignal }
  if (bySignal) {
    const number = Number(bySignal[1])
    const name = Object.keys(osConstants.signals).find((n) => osConstants.signals[n] === number)
    return { cpu, code: null, signal: name ?? `signal ${number}` }
  }
  return { cpu, code: timeCode, signal: null }
}

/** Kills a test that outlived its watchdog: the node process under GNU time (then time ends), else the child. */
function killTest(child) {
  try {
    const [pid] = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')
    if (TIME && pid) {
      process.kill(Number(pid), 'SIGKILL')
      return
    }
  } catch {}
  child.kill('SIGKILL')
}

/**
 * Reads one line of a file's TAP: a `not ok` names a failure with the subtests it sits in (`subtests[0]` is
 * the file). A subtest's own result line after failures inside it repeats them; alone (a timeout, a throw)
 * it is the failure.
 */
function readLine(line, subtests, failures) {
  const subtest = /^(\s*)# Subtest: (.*)$/.exec(line)
  if (subtest) {
    const depth = subtest[1].length / 4 + 1
    subtests.length = depth
    subtests[depth] = subtest[2]
    return
  }
  const notOk = /^(\s*)not ok \d+ - (.*)$/.exec(line)
  if (notOk && !/# TODO|# SKIP/.test(notOk[2])) {
    const depth = notOk[1].length / 4 + 1
    const title = notOk[2].replace(/ # time=[\d.]+m?s$/, '')
    const own = subtests[depth] === title
    const name = subtests.slice(0, depth).concat(title).join(' > ')
    if (!own || !failures.some((f) => f.startsWith(`${name} > `))) failures.push(name)
  }
}
