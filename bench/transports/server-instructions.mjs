// Instructions per request of the bench/transports server over real sockets, counted by valgrind's
// callgrind: load-independent, where server CPU per request (run.mjs) moves with the machine's load. The
// tree's own bench/transports/server.mjs runs under `valgrind --tool=callgrind --instr-atstart=no` with
// `node --single-threaded` (V8's background threads would add their own, varying, instructions); for each
// case, client.mjs (not under valgrind, another process) connects and sends BENCH_IR_WARMUP requests
// uncounted, then instrumentation is switched on (`callgrind_control -i on`), exactly BENCH_IR_REQUESTS
// requests are sent (16 connections × 8 in flight, as run.mjs), instrumentation is switched off and the
// count is dumped (`callgrind_control --dump`): one dump per case, costs since the previous dump.
//
// Instructions are user-space only: the kernel's socket work (the reads and writes themselves) is not
// counted, and it is a large part of a raw echo's cost. BENCH_IR_SYSCALLS=1 adds syscalls per request
// from a second, plain run (no valgrind) with `strace -c -f` attached for the measured requests only.
//
//   node bench/transports/server-instructions.mjs
//   env: BENCH_IR_CASES (comma-separated substrings of case names; default all)
//        BENCH_IR_REQUESTS (2000 per window) BENCH_IR_WINDOWS (5: the median is reported) BENCH_IR_WARMUP (10000) BENCH_CONNECTIONS (16) BENCH_DEPTH (8)
//        BENCH_BEFORE=<another built checkout>: its own server.mjs measured beside this one (in parallel)
//        BENCH_IR_KEEP=<dir>: keep the callgrind dumps there (`callgrind_annotate <dir>/<tree>/cg.<n>`, n counting windows);
//        with JIT code most JavaScript shows as addresses: use `--cpu-prof` profiles for that part
//        BENCH_IR_SYSCALLS=1 (needs strace)
//        BENCH_IR_NODE_ARGS="--perf-basic-prof": names for JIT code (/tmp/perf-<pid>.map: the address
//        ranges of JavaScript functions, for the `0x…` entries of callgrind_annotate)
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
const windows = Number(process.env.BENCH_IR_WINDOWS ?? 5)
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
 * after each; resolves with the median of what `onDone` returned.
 */
function drive(kind, port, options, windows, onReady, onDone) {
  const args = [`${here}client.mjs`, kind, String(port), '0', connections, depth]
  const counted = [warmup, requests, windows]
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
        if (results.length === windows) resolve(results.sort((a, b) => a - b)[(windows - 1) >> 1])
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

/** The instructions of dump `n` in `outDir` (its `totals:` line; callgrind may still be writing it). */
async function dumpTotal(outDir, n) {
  for (;;) {
    const file = readdirSync(outDir).find((f) => f.endsWith(`.${n}`))
    const total = file && /^totals: (\d+)/m.exec(readFileSync(join(outDir, file), 'utf8'))
    if (total) return Number(total[1])
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Instructions per request of every case on one tree's server, under callgrind. */
async function instructionsOf(root, tree) {
  const keep = process.env.BENCH_IR_KEEP
  const outDir = keep ? join(keep, tree) : mkdtempSync(join(tmpdir(), 'bench-ir-'))
  mkdirSync(outDir, { recursive: true })
  const { server, ports, token } = await startServer(root, outDir, false)
  const result = {}
  try {
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
          return (await dumpTotal(outDir, dumps)) / requests
        },
      )
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
          const total = /\s(\d+)\s+(?:\d+\s+)?total/.exec(summary)
          return total ? Number(total[1]) / requests : Number.NaN
        },
      )
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
const head = trees.map(([t]) => t.padStart(10)).join('')
const sysHead = syscalls ? trees.map(([t]) => `${t} sys/req`.padStart(16)).join('') : ''
console.log(`${'case'.padEnd(34)}${head}${sysHead}`)
for (const [name] of cases) {
  const ir = counted.map((r) => Math.round(r[name]).toString().padStart(10)).join('')
  const sys = syscalls ? syscalls.map((r) => r[name].toFixed(3).padStart(16)).join('') : ''
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
console.log("\nratios (as throughput: the reference case's instructions per request ÷ ours)")
for (const [label, cheap, ours] of ratios) {
  const row = counted.map((r) =>
    r[cheap] && r[ours] ? (r[cheap] / r[ours]).toFixed(2).padStart(10) : '       n/a',
  )
  console.log(`${label.padEnd(40)}${row.join('')}`)
}
