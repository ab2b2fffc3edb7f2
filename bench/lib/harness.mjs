// Shared benchmark harness: servers pinned to CPU 0, the load generator (autocannon) pinned to CPU 1,
// interleaved rounds, medians, and ratios against a baseline measured in the same run.
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const autocannonBin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js')
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0

function pinned(cpu, args) {
  return hasTaskset ? ['taskset', ['-c', String(cpu), ...args]] : [args[0], args.slice(1)]
}

/** Starts `node script` on CPU 0; the script prints `LISTENING <port>` when ready. */
export async function startServer(script, env = {}) {
  const [cmd, args] = pinned(0, [process.execPath, script])
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

/** One autocannon run on CPU 1; returns requests/s (mean over the run) and non-2xx count. */
export function load({
  url,
  method = 'GET',
  headers = {},
  body,
  duration = 3,
  connections = 50,
  pipelining = 1,
}) {
  const args = [
    autocannonBin,
    '-j',
    '-d',
    String(duration),
    '-c',
    String(connections),
    '-p',
    String(pipelining),
    '-m',
    method,
  ]
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`)
  if (body !== undefined) args.push('-b', typeof body === 'string' ? body : JSON.stringify(body))
  args.push(url)
  const [cmd, cmdArgs] = pinned(1, [process.execPath, ...args])
  const out = spawnSync(cmd, cmdArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (out.status !== 0) throw new Error(`autocannon failed: ${out.stderr}`)
  const result = JSON.parse(out.stdout)
  return {
    rps: result.requests.average,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
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
 * each case to the baseline case.
 */
export async function compare({ title, cases, baseline, rounds = 5, duration = 3, connections = 50 }) {
  const samples = Object.fromEntries(cases.map((c) => [c.name, []]))
  const cpu = Object.fromEntries(cases.map((c) => [c.name, []]))
  // Warm-up: JIT and connection pools.
  for (const c of cases) load({ ...c, duration: 1, connections })
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const before = c.pid ? cpuMs(c.pid) : Number.NaN
      const { rps, total, non2xx, errors } = load({ ...c, duration, connections })
      if (c.pid) cpu[c.name].push(((cpuMs(c.pid) - before) * 1000) / total)
      if (non2xx > 0 || errors > 0) console.warn(`  ! ${c.name}: ${non2xx} non-2xx, ${errors} errors`)
      samples[c.name].push(rps)
    }
  }
  const base = median(samples[baseline])
  const baseCpu = median(cpu[baseline])
  const withCpu = cases.every((c) => c.pid)
  console.log(`\n${title} (${rounds} interleaved rounds × ${duration}s, ${connections} connections, medians)`)
  console.log(
    'case'.padEnd(40),
    'req/s'.padStart(10),
    `ratio vs ${baseline}`.padStart(22),
    ...(withCpu ? ['server CPU µs/req'.padStart(18), 'throughput at equal CPU'.padStart(24)] : []),
  )
  const rows = []
  for (const c of cases) {
    const m = median(samples[c.name])
    const us = median(cpu[c.name])
    rows.push({ name: c.name, rps: Math.round(m), ratio: m / base, cpuUsPerRequest: us })
    console.log(
      c.name.padEnd(40),
      String(Math.round(m)).padStart(10),
      (m / base).toFixed(2).padStart(22),
      // CPU per request on the server core: what the server itself costs, whatever the load generator does.
      ...(withCpu ? [us.toFixed(1).padStart(18), (baseCpu / us).toFixed(2).padStart(24)] : []),
    )
  }
  return rows
}
