// Shared benchmark harness: servers pinned to CPU 0, the HTTP load generator (wrk, `-t1`, /usr/bin/wrk or
// BENCH_WRK) pinned to CPU 1, interleaved rounds, medians, and ratios against a baseline measured in the
// same run. wrk (C, epoll) rather than autocannon (Node.js): autocannon saturated its own core before a
// fast server did, so the figures measured the generator (issue 19).
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0

function pinned(cpu, args) {
  return hasTaskset ? ['taskset', ['-c', String(cpu), ...args]] : [args[0], args.slice(1)]
}

/**
 * Starts `node script` on CPU 0 (or `cpus`, a taskset CPU list such as `2` or `4-7`); the script prints
 * `LISTENING <port>` when ready.
 */
export async function startServer(script, env = {}, { cpus = '0' } = {}) {
  const [cmd, args] = pinned(cpus, [process.execPath, script])
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  let buffer = ''
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      buffer += chunk
      const m = /LISTENING (\d+)/.exec(buffer)
      if (m) resolve(Number(m[1]))
    })
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)))
  })
  return {
    port,
    pid: child.pid,
    /** Every line the server printed before it was ready (e.g. a token for the load). */
    lines: buffer.split('\n'),
    async stop() {
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
  }
}

const WRK = process.env.BENCH_WRK ?? '/usr/bin/wrk'

/**
 * Suites that load a server over HTTP call this first: without wrk they would start their servers and die
 * in `spawn` with a stack trace; instead one line says how to get it and the process exits 1.
 */
export function requireWrk() {
  try {
    accessSync(WRK, constants.X_OK)
  } catch {
    console.error(
      `bench: wrk (the HTTP load generator) is missing at ${WRK}: install it with \`apt-get install wrk\` (or set BENCH_WRK to its path)`,
    )
    process.exit(1)
  }
}
/** Seconds of load per case before each round of `compare` (BENCH_WARMUP; see the warm-up there). */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP ?? 3)

/** The Lua script given to wrk: method, body, pipelining, and a `done()` that prints the totals as JSON. */
function wrkScript({ method, body, pipelining }) {
  const lines = [`wrk.method = ${luaString(method)}`]
  if (body !== undefined)
    lines.push(`wrk.body = ${luaString(typeof body === 'string' ? body : JSON.stringify(body))}`)
  if (pipelining > 1) {
    // wrk has no pipelining flag: each write sends `pipelining` requests (wrk's own pipeline.lua), and
    // wrk counts every response it parses. Batches: a connection sends its next batch once every response
    // of the previous one has arrived (autocannon -p refilled each slot as its response came back).
    lines.push(
      'local batch',
      'function init(args)',
      '  local r = {}',
      `  for i = 1, ${pipelining} do r[i] = wrk.format() end`,
      '  batch = table.concat(r)',
      'end',
      'function request() return batch end',
    )
  }
  lines.push(
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(\'WRK_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"connect":%d,"read":%d,' +
      '"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\\n\',',
    '    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
  )
  return `${lines.join('\n')}\n`
}

/** A Lua long-bracket string literal (no escapes inside), with a level that the text does not close. */
function luaString(text) {
  let level = ''
  while (text.includes(`]${level}]`)) level += '='
  return `[${level}[${text.startsWith('\n') ? '\n' : ''}${text}]${level}]`
}

let scriptCount = 0
const scriptDir = mkdtempSync(join(tmpdir(), 'trivium-bench-wrk-'))
process.once('exit', () => rmSync(scriptDir, { recursive: true, force: true }))

/** The wrk command line (pinned to CPU 1, or `cpus`; `threads` wrk threads, default 1) for one load. */
function wrkCommand({
  url,
  method = 'GET',
  headers = {},
  body,
  duration = 3,
  connections = 50,
  pipelining = 1,
  cpus = '1',
  threads = 1,
}) {
  const script = join(scriptDir, `load-${process.pid}-${scriptCount++}.lua`)
  writeFileSync(script, wrkScript({ method, body, pipelining }))
  const args = [
    WRK,
    `-t${threads}`,
    `-c${connections}`,
    `-d${duration}s`,
    '--timeout',
    '10s',
    '--latency',
    '-s',
    script,
  ]
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`)
  args.push(url)
  return { command: withTimes(pinned(cpus, args)), script }
}

/**
 * Runs the command under `sh`, which then prints its `times` (CPU used by its children) on stderr: the
 * generator's own CPU time, to see whether it had headroom (a generator at 100 % of its core is the limit).
 */
function withTimes([cmd, args]) {
  return ['/bin/sh', ['-c', '"$@"; status=$?; times >&2; exit $status', 'sh', cmd, ...args]]
}

/** The children's user + system CPU seconds from `times` (last line: `0m1.23s 0m0.45s`). */
function childCpuSeconds(stderr) {
  const line = stderr.trim().split('\n').at(-1) ?? ''
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(line.trim())
  return m ? Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]) : Number.NaN
}

/**
 * wrk's totals from its output: requests/s over the run, responses with status >= 400 ("Non-2xx or 3xx
 * responses" in wrk's text; wrk counts 4xx/5xx only, autocannon's non2xx also counted 3xx) and socket
 * errors (connect, read, write, timeout), latency percentiles in ms.
 */
function parseWrk(stdout, stderr) {
  const line = stdout.split('\n').find((l) => l.startsWith('WRK_JSON '))
  if (!line) throw new Error(`wrk printed no result:\n${stdout}\n${stderr}`)
  const r = JSON.parse(line.slice(9))
  return {
    /** The generator's CPU time over the run's wall time (1 = its whole core). */
    generatorCpu: childCpuSeconds(stderr) / (r.durationUs / 1e6),
    rps: (r.requests * 1e6) / r.durationUs,
    total: r.requests,
    non2xx: r.status,
    errors: r.connect + r.read + r.write + r.timeout,
    latency: { p50: r.p50Us / 1000, p99: r.p99Us / 1000, max: r.maxUs / 1000 },
    text: stdout,
  }
}

/**
 * One wrk run (`wrk -t1 -c<connections>`, on CPU 1): requests/s (mean over the run), total requests,
 * non-2xx count (4xx/5xx), socket errors and latency (ms). Options: url, method, headers, body (string or
 * JSON), duration (s), connections, pipelining (requests in flight per connection), cpus (taskset CPU
 * list, default `1`), threads (default 1).
 */
export function load(options) {
  const { command, script } = wrkCommand(options)
  const out = spawnSync(command[0], command[1], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  rmSync(script, { force: true })
  if (out.status !== 0) throw new Error(`wrk failed (${out.status}): ${out.stderr}${out.stdout}`)
  return parseWrk(out.stdout, out.stderr)
}

/**
 * Several wrk runs at the same time (e.g. one per server instance), on CPU 1 unless given; resolves to the
 * results in order and their sum (`rps`, `total`, `non2xx`, `errors`; `latency` is the worst p99).
 */
export async function loadParallel(list) {
  const results = await Promise.all(
    list.map(async (options) => {
      const { command, script } = wrkCommand(options)
      const child = spawn(command[0], command[1], { stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (c) => {
        stdout += c
      })
      child.stderr.on('data', (c) => {
        stderr += c
      })
      const [code] = await once(child, 'exit')
      rmSync(script, { force: true })
      if (code !== 0) throw new Error(`wrk failed (${code}): ${stderr}${stdout}`)
      return parseWrk(stdout, stderr)
    }),
  )
  const sum = (k) => results.reduce((a, r) => a + r[k], 0)
  return {
    results,
    rps: sum('rps'),
    total: sum('total'),
    non2xx: sum('non2xx'),
    errors: sum('errors'),
    latency: { p99: Math.max(...results.map((r) => r.latency.p99)) },
  }
}

/**
 * autocannon, kept only for the generator headroom check of bench/side-by-side (the same server under
 * both generators): autocannon is a Node.js process and saturates its core before a fast server does,
 * which is why every other HTTP load uses wrk.
 */
export function loadAutocannon({ url, duration = 3, connections = 50 }) {
  const autocannonBin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js')
  const args = [autocannonBin, '-j', '-d', String(duration), '-c', String(connections), url]
  const [cmd, cmdArgs] = withTimes(pinned(1, [process.execPath, ...args]))
  const out = spawnSync(cmd, cmdArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (out.status !== 0) throw new Error(`autocannon failed: ${out.stderr}`)
  const result = JSON.parse(out.stdout)
  return {
    rps: result.requests.average,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    generatorCpu: childCpuSeconds(out.stderr) / (result.duration || duration),
  }
}

const CLOCK_TICKS = 100 // USER_HZ on Linux
/** CPU time (user + system) a process has used, in ms. */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/**
 * Runs every case `rounds` times, interleaved (the machine drifts), and prints medians and the ratio of
 * each case to the baseline case (and to `secondBaseline`, when given, e.g. a ceiling). A case is
 * `{ name, url, pid?, method?, headers?, body? }`; with `pid` on every case, the server's CPU time per
 * request is printed too. Returns one row per case: name, rps, ratio, ratio2 (vs secondBaseline),
 * cpuUsPerRequest, p99Ms, non2xx, errors.
 */
export async function compare({
  title,
  cases,
  baseline,
  secondBaseline,
  rounds = 5,
  duration = 3,
  connections = 50,
  beforeRound,
}) {
  const samples = Object.fromEntries(cases.map((c) => [c.name, []]))
  const cpu = Object.fromEntries(cases.map((c) => [c.name, []]))
  const p99 = Object.fromEntries(cases.map((c) => [c.name, []]))
  const refused = Object.fromEntries(cases.map((c) => [c.name, { non2xx: 0, errors: 0 }]))
  // Warm-up: JIT and connection pools. A fresh server climbs for about 3 s under load before its rate
  // levels off here (1-s windows from the first request: the ceiling 30, 41, 46, 46 k req/s; the full stack
  // 18, 29, 34, 32 k), longer for the full stack than for bare Fastify, so a 1-s warm-up left part of the
  // climb in the measured run and biased the comparison against the bigger server.
  const warmUp = () => {
    for (const c of cases) load({ ...c, duration: WARMUP_SECONDS, connections })
  }
  // beforeRound (optional) may start fresh server processes and update the cases' url/pid: a process's
  // own luck (hash seeds, heap layout, JIT timing) then varies across rounds instead of biasing a case.
  if (!beforeRound) warmUp()
  for (let r = 0; r < rounds; r++) {
    if (beforeRound) {
      await beforeRound(r)
      warmUp()
    }
    for (const c of cases) {
      const before = c.pid ? cpuMs(c.pid) : Number.NaN
      const { rps, total, non2xx, errors, latency } = load({ ...c, duration, connections })
      if (c.pid) cpu[c.name].push(((cpuMs(c.pid) - before) * 1000) / total)
      if (non2xx > 0 || errors > 0) console.warn(`  ! ${c.name}: ${non2xx} non-2xx, ${errors} errors`)
      refused[c.name].non2xx += non2xx
      refused[c.name].errors += errors
      samples[c.name].push(rps)
      p99[c.name].push(latency.p99)
    }
  }
  const base = median(samples[baseline])
  const second = secondBaseline ? median(samples[secondBaseline]) : Number.NaN
  const baseCpu = median(cpu[baseline])
  const withCpu = cases.every((c) => c.pid)
  console.log(`\n${title} (wrk -t1 -c${connections}, ${rounds} interleaved rounds × ${duration}s, medians)`)
  console.log(
    'case'.padEnd(40),
    'req/s'.padStart(10),
    `ratio vs ${baseline}`.padStart(22),
    ...(secondBaseline ? [`vs ${secondBaseline}`.padStart(22)] : []),
    'p99 ms'.padStart(8),
    ...(withCpu ? ['server CPU µs/req'.padStart(18), 'throughput at equal CPU'.padStart(24)] : []),
  )
  const rows = []
  for (const c of cases) {
    const m = median(samples[c.name])
    const us = median(cpu[c.name])
    rows.push({
      name: c.name,
      rps: Math.round(m),
      ratio: m / base,
      ratio2: m / second,
      cpuUsPerRequest: us,
      p99Ms: median(p99[c.name]),
      ...refused[c.name],
    })
    console.log(
      c.name.padEnd(40),
      String(Math.round(m)).padStart(10),
      (m / base).toFixed(2).padStart(22),
      ...(secondBaseline ? [(m / second).toFixed(2).padStart(22)] : []),
      median(p99[c.name]).toFixed(2).padStart(8),
      // CPU per request on the server core: what the server itself costs, whatever the load generator does.
      ...(withCpu ? [us.toFixed(1).padStart(18), (baseCpu / us).toFixed(2).padStart(24)] : []),
    )
  }
  return rows
}
