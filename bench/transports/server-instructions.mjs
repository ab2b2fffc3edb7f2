// Instructions per request of the bench/transports server over real sockets, counted by valgrind's
// callgrind: load-independent, where server CPU per request (run.mjs) moves with the machine's load. The
// tree's own bench/transports/server.mjs runs under `valgrind --tool=callgrind --instr-atstart=no` with
// `node --single-threaded` (V8's background threads would add their own, varying, instructions). Every
// case is first warmed up once (client.mjs, another process, not under valgrind: BENCH_IR_WARMUP requests
// uncounted); then, case by case, BENCH_IR_REQUESTS more uncounted, and BENCH_IR_WINDOWS windows of
// exactly BENCH_IR_REQUESTS requests (16 connections × 8 in flight, as run.mjs), each between
// `callgrind_control -i on` and `-i off` and dumped (`--dump`: the costs since the previous dump).
// A window can hold a full garbage collection or an optimizing compile: the median and the least of the
// windows are printed.
//
// Instructions are user space only: the kernel's socket work (the reads and writes themselves) is not
// counted, and it is a large part of a raw echo's cost. The table gives the calls of libc's read, write,
// writev and epoll wrappers per request in the same windows (how many requests one read or write
// carried: per-read and per-write costs depend on it); BENCH_IR_SYSCALLS=1 adds system calls per request
// from a second, plain run (no valgrind) with `strace -c -f` attached for one window per case.
//
//   node bench/transports/server-instructions.mjs
//   env: BENCH_IR_CASES (comma-separated substrings of case names; default all)
//        BENCH_IR_REQUESTS (2000) BENCH_IR_WINDOWS (3) BENCH_IR_WARMUP (10000)
//        BENCH_CONNECTIONS (16) BENCH_DEPTH (8)
//        BENCH_BEFORE=<another built checkout>: its own server.mjs measured beside this one (in parallel)
//        BENCH_IR_KEEP=<dir>: keep the dumps (`callgrind_annotate <dir>/<tree>/cg.<n>`, n counting windows)
//        BENCH_IR_NODE_ARGS="--perf-basic-prof": names for JIT code (/tmp/perf-<pid>.map: the address
//        ranges of JavaScript functions, for the `0x…` entries of callgrind_annotate; the last range
//        written that holds an address is the one)
//        BENCH_IR_SYSCALLS=1 (needs strace)
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const here = new URL('.', import.meta.url).pathname
const requests = Number(process.env.BENCH_IR_REQUESTS ?? 2000)
const warmup = Number(process.env.BENCH_IR_WARMUP ?? 10_000)
const connections = process.env.BENCH_CONNECTIONS ?? '16'
const depth = process.env.BENCH_DEPTH ?? '8'
// A garbage collection of the whole heap in a window costs as much as thousands of requests: the median
// of several windows (`BENCH_IR_WINDOWS`) is reported.
const windows = Number(process.env.BENCH_IR_WINDOWS ?? 3)
const only = process.env.BENCH_IR_CASES?.split(',').filter(Boolean)

/** [name, client kind, port key, client options(token)] — the frame cases of run.mjs. */
const CASES = [
  ['named route WebSocket', 'ws', 'http', () => ({ endpoint: 'named.hello' })],
  ['named route TCP direct', 'tcp', 'tcpDirect', () => ({ endpoint: 'named.hello' })],
  ['trivium TCP inject', 'tcp', 'tcpInject', () => ({})],
  ['trivium TCP direct', 'tcp', 'tcpDirect', () => ({})],
  [
    'auth TCP direct',
    'tcp',
    'tcpDirect',
    (t) => ({ endpoint: 'secure', meta: { format: 'json', auth_token: t } }),
  ],
  ['trivium WebSocket', 'ws', 'http', () => ({})],
  ['auth WebSocket', 'ws', 'http', (t) => ({ endpoint: 'secure', query: `format=json&token=${t}` })],
  ['raw ws echo (ceiling)', 'ws', 'wsRaw', () => ({})],
  ['raw net echo (ceiling)', 'tcp', 'netRaw', () => ({})],
  [
    'raw net, secure frames (ceiling)',
    'tcp',
    'netRaw',
    (t) => ({ endpoint: 'secure', meta: { format: 'json', auth_token: t } }),
  ],
]
const cases = only ? CASES.filter(([n]) => only.some((o) => n.includes(o))) : CASES

/** Starts `root`'s server.mjs (under callgrind unless `plain`); resolves with the child, ports and token. */
function startServer(root, outDir, plain) {
  const extra = process.env.BENCH_IR_NODE_ARGS?.split(' ').filter(Boolean) ?? []
  const node = [process.execPath, '--single-threaded', ...extra, `${root}/bench/transports/server.mjs`]
  const server = plain
    ? spawn(node[0], node.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(
        'valgrind',
        ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outDir}/cg`, ...node],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      )
  let out = ''
  let err = ''
  server.stderr?.on('data', (c) => {
    err = (err + c).slice(-4000)
  })
  return new Promise((resolve, reject) => {
    server.stdout.on('data', (c) => {
      out += c
      const ports = /PORTS (\{.*\})/.exec(out)
      const token = /TOKEN (\S+)/.exec(out)
      if (ports && token) resolve({ server, ports: JSON.parse(ports[1]), token: token[1] })
    })
    server.once('exit', (code) => reject(new Error(`server (${root}) exited with ${code}: ${err}`)))
  })
}

/**
 * Runs client.mjs in counted mode: `onReady()` before each of the `windows` measured parts, `onDone()`
 * after each; resolves with what `onDone` returned, in order.
 */
function drive(kind, port, options, windows, onReady, onDone, warm = warmup) {
  const args = [`${here}client.mjs`, kind, String(port), '0', connections, depth]
  const counted = [warm, requests, windows]
  const client = spawn(process.execPath, [...args, JSON.stringify({ ...options, counted })])
  let out = ''
  let err = ''
  client.stderr.on('data', (c) => {
    err += c
  })
  const results = []
  return new Promise((resolve, reject) => {
    // Lines in order: one chunk may end a window and start the next (`MEASURED …` then `READY`).
    let chain = Promise.resolve()
    const onLine = async (line) => {
      if (process.env.BENCH_VERBOSE) console.error(`  client: ${line}`)
      if (line === 'READY') {
        await onReady()
        client.stdin.write('go\n')
      }
      const measured = /^MEASURED \d+ (\{.*\})$/.exec(line)
      if (measured) {
        const { errors, firstError } = JSON.parse(measured[1])
        if (errors) console.warn(`  ! ${errors} errors: ${firstError}`)
        results.push(await onDone())
        if (results.length === windows) resolve(results)
      }
    }
    client.stdout.on('data', (c) => {
      out += c
      const lines = out.split('\n')
      out = lines.pop()
      for (const line of lines) chain = chain.then(() => onLine(line)).catch(reject)
    })
    client.once('exit', (code) => code !== 0 && reject(new Error(`client exited with ${code}: ${err}`)))
  })
}

const control = (pid, ...args) =>
  execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' })

/** The system calls counted in a dump: calls into libc's wrappers (the kernel's share is not counted). */
const SYSCALLS = new Set(['read', 'readv', 'write', 'writev', 'epoll_pwait', 'epoll_wait', 'epoll_ctl'])

/**
 * Dump `n` in `outDir` (callgrind may still be writing it): its instructions (`totals:`) and its calls of
 * SYSCALLS (`cfn=` then `calls=` lines; a name is given once, then its number alone).
 */
async function dumpOf(outDir, n) {
  for (;;) {
    const file = readdirSync(outDir).find((f) => f.endsWith(`.${n}`))
    const text = file === undefined ? '' : readFileSync(join(outDir, file), 'utf8')
    const total = /^totals: (\d+)/m.exec(text)
    if (total) {
      const instructions = Number(total[1])
      return { instructions, compiling: compiling(join(outDir, file)), syscalls: syscallsIn(text) }
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/**
 * V8's compiling in a dump (inclusive: TurboFan's jobs, lazy bytecode compiles, deoptimization), from
 * callgrind_annotate. Under `--single-threaded` it runs on the main thread, and a case's windows keep
 * re-optimizing code that the other cases' calls deoptimized: one window read 122k, another 484k
 * instructions per request, 66 % of it compiling. Without it the windows agree far better.
 */
const COMPILING = [
  'PipelineCompilationJob::PrepareJobImpl',
  'PipelineCompilationJob::ExecuteJobImpl',
  'PipelineCompilationJob::FinalizeJobImpl',
  'Compiler::Compile(v8::internal::Isolate*, v8::internal::Handle<v8::internal::SharedFunctionInfo>',
  'Deoptimizer::',
]

function compiling(file) {
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  })
  const seen = new Set()
  let sum = 0
  for (const line of annotated.split('\n')) {
    const row = /^\s*([\d,]+) \(.*?\)\s+(.*)$/.exec(line)
    if (row === null) continue
    const name = row[2].split(' [')[0]
    if (name.includes("'")) continue // a recursion's inner level, already in its outer one
    for (const part of COMPILING) {
      if (!seen.has(part) && name.includes(part)) {
        seen.add(part)
        sum += Number(row[1].replaceAll(',', ''))
      }
    }
  }
  return sum
}

function syscallsIn(dump) {
  const names = new Map()
  let callee
  let calls = 0
  for (const line of dump.split('\n')) {
    const fn = /^(c?fn)=\((\d+)\)(?: (.*))?$/.exec(line)
    if (fn) {
      if (fn[3] !== undefined) names.set(fn[2], fn[3])
      callee = fn[1] === 'cfn' ? fn[2] : undefined
    } else if (callee !== undefined && line.startsWith('calls=') && SYSCALLS.has(names.get(callee))) {
      calls += Number(line.slice(6).split(' ')[0])
    }
  }
  return calls
}

const median = (values) => values.sort((a, b) => a - b)[(values.length - 1) >> 1]

/** Instructions per request of every case on one tree's server, under callgrind. */
async function instructionsOf(root, tree) {
  const keep = process.env.BENCH_IR_KEEP
  const outDir = keep ? join(keep, tree) : mkdtempSync(join(tmpdir(), 'bench-ir-'))
  mkdirSync(outDir, { recursive: true })
  const { server, ports, token } = await startServer(root, outDir, false)
  const result = {}
  try {
    // Every case warmed up first (its code compiled, the heap grown to its working size), as run.mjs
    // does; then each case again shortly before its windows.
    const nothing = () => {}
    for (const [, kind, portKey, options] of cases)
      await drive(kind, ports[portKey], options(token), 1, nothing, nothing)
    let dumps = 0
    for (const [name, kind, portKey, options] of cases) {
      if (process.env.BENCH_VERBOSE) console.error(`${tree}: ${name}`)
      result[name] = await drive(
        kind,
        ports[portKey],
        options(token),
        windows,
        () => control(server.pid, '-i', 'on'),
        async () => {
          control(server.pid, '-i', 'off')
          // a plain word: callgrind_control does not pass every character (parentheses hung it)
          control(server.pid, `--dump=d${++dumps}`)
          return dumpOf(outDir, dumps)
        },
        requests,
      ).then((all) => ({
        instructions: median(all.map((w) => w.instructions / requests)),
        least: Math.min(...all.map((w) => w.instructions / requests)),
        running: Math.min(...all.map((w) => (w.instructions - w.compiling) / requests)),
        syscalls: median(all.map((w) => w.syscalls / requests)),
      }))
    }
  } finally {
    server.kill('SIGTERM')
  }
  return result
}

/** Syscalls per request of every case, from a plain server with strace attached for the measured part. */
async function syscallsOf(root) {
  const { server, ports, token } = await startServer(root, '', true)
  const result = {}
  try {
    for (const [name, kind, portKey, options] of cases) {
      let strace
      let summary = ''
      result[name] = await drive(
        kind,
        ports[portKey],
        options(token),
        1,
        async () => {
          strace = spawn('strace', ['-c', '-f', '-p', String(server.pid)], {
            stdio: ['ignore', 'ignore', 'pipe'],
          })
          strace.stderr.on('data', (c) => {
            summary += c
          })
          // strace says "Process … attached" once it traces: wait for that before the measured requests
          while (!summary.includes('attached')) await new Promise((r) => setTimeout(r, 10))
        },
        async () => {
          strace.kill('SIGINT')
          await new Promise((r) => strace.once('exit', r))
          // `% time, seconds, usecs/call, calls, [errors], total`: the calls are the fourth field
          const total = summary.split('\n').find((line) => line.trim().endsWith(' total'))
          return total ? Number(total.trim().split(/\s+/)[3]) / requests : Number.NaN
        },
      ).then(([calls]) => calls)
    }
  } finally {
    server.kill('SIGTERM')
  }
  return result
}

const trees = [['now', new URL('../..', import.meta.url).pathname.replace(/\/$/, '')]]
if (process.env.BENCH_BEFORE) trees.push(['before', process.env.BENCH_BEFORE.replace(/\/$/, '')])
const counted = await Promise.all(trees.map(([tree, root]) => instructionsOf(root, tree)))
const syscalls =
  process.env.BENCH_IR_SYSCALLS === '1'
    ? await Promise.all(trees.map(([, root]) => syscallsOf(root)))
    : undefined

console.log(
  `\nserver instructions per request (callgrind, user space only; median of ${windows} windows of ${requests} requests after ${warmup} warm-up, ${connections} × ${depth} in flight)`,
)
console.log(
  '(least): the window with the fewest (a window may also hold a full GC or an optimizing compile);',
)
console.log("running: the least without V8's compiling (COMPILING): the figure to compare")
console.log('sys/req: calls of libc read/write/writev/epoll per request in the same windows (batching)')
const columns = trees
  .map(([t]) => `${t.padStart(10)}${'(least)'.padStart(10)}${'running'.padStart(10)}${'sys/req'.padStart(9)}`)
  .join('')
const straced = syscalls ? trees.map(([t]) => `${t} strace/req`.padStart(18)).join('') : ''
console.log(`${'case'.padEnd(34)}${columns}${straced}`)
for (const [name] of cases) {
  const ir = counted
    .map(
      (r) =>
        `${[r[name].instructions, r[name].least, r[name].running].map((n) => Math.round(n).toString().padStart(10)).join('')}${r[name].syscalls.toFixed(3).padStart(9)}`,
    )
    .join('')
  const sys = syscalls ? syscalls.map((r) => r[name].toFixed(3).padStart(18)).join('') : ''
  console.log(`${name.padEnd(34)}${ir}${sys}`)
}
const ratios = [
  ['named route WS ÷ TCP inject (≥ 1.0)', 'trivium TCP inject', 'named route WebSocket'],
  ['named route TCP ÷ TCP inject (≥ 1.0)', 'trivium TCP inject', 'named route TCP direct'],
  ['WebSocket ÷ raw ws, hello (≥ 0.7)', 'raw ws echo (ceiling)', 'trivium WebSocket'],
  ['WebSocket ÷ raw ws, secure (≥ 0.7)', 'raw ws echo (ceiling)', 'auth WebSocket'],
  ['TCP direct ÷ raw net, hello (≥ 0.8)', 'raw net echo (ceiling)', 'trivium TCP direct'],
  ['TCP direct ÷ raw net, secure (≥ 0.8)', 'raw net, secure frames (ceiling)', 'auth TCP direct'],
]
console.log(
  `\nratios by running instructions (as throughput: the reference case's ÷ ours)${trees.map(([t]) => t.padStart(10)).join('')}`,
)
for (const [label, cheap, ours] of ratios) {
  const row = counted.map((r) =>
    r[cheap] && r[ours] ? (r[cheap].running / r[ours].running).toFixed(2).padStart(10) : '       n/a',
  )
  console.log(`${label.padEnd(74)}${row.join('')}`)
}
