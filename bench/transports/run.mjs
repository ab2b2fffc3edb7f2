// Requests/s of one endpoint over HTTP, WebSocket, TCP direct and TCP inject, next to a bare Fastify
// route and raw `ws` / `net` echo ceilings, all measured in the same run: server on CPU 0, load on
// CPU 1, interleaved rounds, medians, printed as ratios. Two endpoints: `hello` (public) and `secure`
// (a valid Bearer token / `token` query / `auth_token` metadata on every request). Not part of the tests.
//
// Every case has the same load shape: BENCH_CONNECTIONS connections × BENCH_DEPTH requests in flight
// per connection (HTTP: autocannon pipelining; WebSocket/TCP: bench/transports/client.mjs).
// Env: BENCH_ROUNDS (3), BENCH_DURATION (s, 3), BENCH_CONNECTIONS (16), BENCH_DEPTH (8),
// BENCH_CASES (comma-separated substrings of case names to run, `=name` for one exactly; default all),
// BENCH_BEFORE (another built checkout: its server measured beside this one, rows `before: …`).
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { load, median, requireWrk } from '../lib/harness.mjs'

requireWrk()

const here = new URL('.', import.meta.url).pathname
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const duration = Number(process.env.BENCH_DURATION ?? 3)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 16)
const depth = Number(process.env.BENCH_DEPTH ?? 8)
const only = process.env.BENCH_CASES?.split(',').filter(Boolean)
// BENCH_ALLOC=1: bytes allocated per request, sampled in the server (slows it: CPU figures of such a run are not comparable)
const allocating = process.env.BENCH_ALLOC === '1'
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0
const pin = (cpu, args) => (hasTaskset ? ['taskset', ['-c', String(cpu), ...args]] : [args[0], args.slice(1)])

/**
 * Starts a tree's bench server (its own server.mjs and build), pinned to CPU 0; resolves with its ports
 * and token. `BENCH_BEFORE=<another built checkout>` runs that tree's server too, beside this one: every
 * case is measured on both in the same interleaved rounds (rows `before: …`).
 */
async function startServer(root) {
  const [cmd, args] = pin(0, [
    process.execPath,
    ...(process.env.BENCH_SERVER_ARGS?.split(' ') ?? []),
    ...(allocating ? [`--import=${here}../lib/alloc-probe.mjs`] : []),
    `${root}/bench/transports/server.mjs`,
  ])
  const server = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  const { ports, token } = await new Promise((resolve, reject) => {
    server.stdout.on('data', (c) => {
      out += c
      const m = /PORTS (\{.*\})/.exec(out)
      const t = /TOKEN (\S+)/.exec(out)
      if (m && t) resolve({ ports: JSON.parse(m[1]), token: t[1] })
    })
    server.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  if (process.env.BENCH_VERBOSE) server.stdout.pipe(process.stderr) // e.g. BENCH_SERVER_ARGS=--trace-gc
  return { server, ports, token }
}
/**
 * Toggles the server's allocation sampling (bench/lib/alloc-probe.mjs): the first call starts it, the
 * next stops it and resolves with the bytes allocated in between.
 */
function allocMark(server) {
  return new Promise((resolve) => {
    let text = ''
    const onData = (chunk) => {
      text += chunk
      const m = /ALLOC (\S+)\n/.exec(text)
      if (m === null) return
      server.stdout.off('data', onData)
      resolve(Number(m[1]))
    }
    server.stdout.on('data', onData)
    server.kill('SIGUSR2')
  })
}
const beforeRoot = process.env.BENCH_BEFORE
const trees = [{ label: '', ...(await startServer(new URL('../..', import.meta.url).pathname)) }]
if (beforeRoot) trees.push({ label: 'before: ', ...(await startServer(beforeRoot)) })

/**
 * The server's CPU time in seconds (Linux /proc; undefined elsewhere). CPU time per request is the
 * figure that holds on a busy machine, where requests/s and even ratios move with the other load.
 * (With taskset, the server is the taskset process's exec'd child: same pid.)
 */
function serverCpuSeconds(server) {
  try {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100 // utime + stime, in USER_HZ (100)
  } catch {
    return undefined
  }
}

function frames(kind, port, seconds, options = {}) {
  const [c, a] = pin(1, [
    process.execPath,
    `${here}client.mjs`,
    kind,
    String(port),
    String(seconds),
    String(connections),
    String(depth),
    JSON.stringify(options),
  ])
  const r = spawnSync(c, a, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  return JSON.parse(r.stdout.trim().split('\n').at(-1))
}

function casesOf({ ports, token }) {
  const http =
    (path, headers = {}) =>
    (s) =>
      load({
        url: `http://127.0.0.1:${ports.http}${path}`,
        headers,
        duration: s,
        connections,
        pipelining: depth,
      })
  /** HTTP/2 load (h2-client.mjs): the same connections × in-flight streams as the HTTP/1.1 pipelining. */
  function h2(origin, path, caFile, headers = {}) {
    return (s) => {
      const [c, a] = pin(1, [
        process.execPath,
        `${here}h2-client.mjs`,
        ...[
          origin,
          path,
          String(s),
          String(connections),
          String(depth),
          caFile ?? '',
          JSON.stringify(headers),
        ],
      ])
      const r = spawnSync(c, a, { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(r.stderr)
      return JSON.parse(r.stdout.trim().split('\n').at(-1))
    }
  }
  const bearer = { authorization: `Bearer ${token}` }
  const tcpMeta = (extra) => ({ meta: { format: 'json', ...extra } })
  return [
    ['bare fastify route (HTTP)', http('/bare')],
    ['trivium HTTP', http('/hello')],
    ['trivium HTTP/2 TLS', h2(`https://127.0.0.1:${ports.h2}`, '/hello', ports.certFile)],
    ['trivium HTTP/2 h2c', h2(`http://127.0.0.1:${ports.h2c}`, '/hello')],
    ['trivium WebSocket', (s) => frames('ws', ports.http, s)],
    ['trivium TCP direct', (s) => frames('tcp', ports.tcpDirect, s)],
    ['trivium TCP inject', (s) => frames('tcp', ports.tcpInject, s)],
    ['auth HTTP', http('/secure', bearer)],
    [
      'auth WebSocket',
      (s) => frames('ws', ports.http, s, { endpoint: 'secure', query: `format=json&token=${token}` }),
    ],
    [
      'auth TCP direct',
      (s) => frames('tcp', ports.tcpDirect, s, { endpoint: 'secure', ...tcpMeta({ auth_token: token }) }),
    ],
    [
      'auth TCP inject',
      (s) => frames('tcp', ports.tcpInject, s, { endpoint: 'secure', ...tcpMeta({ auth_token: token }) }),
    ],
    // A named Fastify route (config.triviumRoute.name) called by name: through the route's hooks and guard.
    ['named route WebSocket', (s) => frames('ws', ports.http, s, { endpoint: 'named.hello' })],
    ['named route TCP direct', (s) => frames('tcp', ports.tcpDirect, s, { endpoint: 'named.hello' })],
    ['raw ws echo (ceiling)', (s) => frames('ws', ports.wsRaw, s)],
    ['raw net echo (ceiling)', (s) => frames('tcp', ports.netRaw, s)],
    // The same raw server fed `auth TCP direct`'s frames (token metadata included): the ceiling for the
    // same request bytes, which the small `hello` frames of the row above are not.
    [
      'raw net, secure frames (ceiling)',
      (s) => frames('tcp', ports.netRaw, s, { endpoint: 'secure', ...tcpMeta({ auth_token: token }) }),
    ],
  ]
}
const allCases = trees.flatMap((tree) =>
  casesOf(tree).map(([name, run]) => [tree.label + name, run, tree.server]),
)
// A BENCH_CASES entry starting with `=` names one case exactly (`=trivium HTTP` without the HTTP/2 rows);
// a tree's label does not count (`before: ` rows match too).
const matches = (name, o) =>
  o.startsWith('=') ? name.replace(/^before: /, '') === o.slice(1) : name.includes(o)
const cases = only ? allCases.filter(([n]) => only.some((o) => matches(n, o))) : allCases
try {
  const samples = Object.fromEntries(cases.map(([n]) => [n, []]))
  const cpu = Object.fromEntries(cases.map(([n]) => [n, []]))
  const serverCpu = Object.fromEntries(cases.map(([n]) => [n, []]))
  const allocated = Object.fromEntries(cases.map(([n]) => [n, []]))
  for (const [, run] of cases) run(1) // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [name, run, server] of cases) {
      if (allocating) await allocMark(server)
      const cpu0 = serverCpuSeconds(server)
      const res = run(duration)
      const cpu1 = serverCpuSeconds(server)
      if (allocating && res.rps > 0) allocated[name].push((await allocMark(server)) / (res.rps * duration))
      // Frame clients also run 0.3 s of connection set-up and a close: a small, constant overcount.
      if (cpu0 !== undefined && cpu1 !== undefined && res.rps > 0)
        serverCpu[name].push(((cpu1 - cpu0) * 1e6) / (res.rps * duration))
      if (res.errors || res.non2xx)
        console.warn(
          `  ! ${name}: errors ${res.errors ?? 0}, non-2xx ${res.non2xx ?? 0} ${res.firstError ?? ''}`,
        )
      samples[name].push(res.rps)
      if (res.clientCpu !== undefined) cpu[name].push(res.clientCpu)
    }
  }
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))
  console.log(
    `\ntransports: GET → {"hello":...}, JSON (${rounds} interleaved rounds × ${duration}s, ${connections} connections × ${depth} in flight, medians)`,
  )
  for (const [name] of cases) {
    const s = serverCpu[name].length ? `server CPU ${median(serverCpu[name]).toFixed(2)} µs/req` : ''
    const c = cpu[name].length ? `client CPU ${median(cpu[name]).toFixed(2)}` : ''
    const a = allocated[name].length ? `  allocated ${Math.round(median(allocated[name]))} B/req` : ''
    console.log(name.padEnd(34), String(Math.round(m[name])).padStart(8), 'req/s  ', s.padEnd(26), c + a)
  }
  const sc = Object.fromEntries(Object.entries(serverCpu).map(([k, v]) => [k, v.length ? median(v) : 0]))
  for (const { label: L } of trees) {
    const ratio = (a, b) => (m[L + a] && m[L + b] ? (m[L + a] / m[L + b]).toFixed(2) : 'n/a')
    console.log(`\n${L}ratios                          hello   secure`)
    const row = (label, a, b, authA = a.replace('trivium', 'auth'), authB = b.replace('trivium', 'auth')) =>
      console.log(label.padEnd(32), ratio(a, b).padStart(5), ratio(authA, authB).padStart(8))
    row('HTTP / bare fastify', 'trivium HTTP', 'bare fastify route (HTTP)', 'auth HTTP')
    row('HTTP/2 TLS / HTTP/1.1', 'trivium HTTP/2 TLS', 'trivium HTTP')
    row('HTTP/2 h2c / HTTP/1.1', 'trivium HTTP/2 h2c', 'trivium HTTP')
    row('WebSocket / HTTP   (≥ 1.2)', 'trivium WebSocket', 'trivium HTTP')
    row('TCP direct / HTTP  (≥ 1.5)', 'trivium TCP direct', 'trivium HTTP')
    row('TCP inject / HTTP  (≥ 1.0)', 'trivium TCP inject', 'trivium HTTP')
    row('TCP inject / direct', 'trivium TCP inject', 'trivium TCP direct')
    row('TCP direct / bare fastify', 'trivium TCP direct', 'bare fastify route (HTTP)', 'auth TCP direct')
    row('WebSocket / raw ws (≥ 0.6)', 'trivium WebSocket', 'raw ws echo (ceiling)', 'auth WebSocket')
    // The same two ratios from server CPU per request (ceiling's / ours): what a server-bound run would
    // show, much steadier than requests/s when other work shares the machine.
    const cpuRatio = (a, b) => (sc[L + a] && sc[L + b] ? (sc[L + b] / sc[L + a]).toFixed(2) : 'n/a')
    const cpuRow = (label, a, b, authA = a.replace('trivium', 'auth'), authB = b) =>
      console.log(label.padEnd(32), cpuRatio(a, b).padStart(5), cpuRatio(authA, authB).padStart(8))
    cpuRow('  by server CPU per request', 'trivium WebSocket', 'raw ws echo (ceiling)')
    row('TCP direct / raw net (≥ 0.7)', 'trivium TCP direct', 'raw net echo (ceiling)', 'auth TCP direct')
    cpuRow('  by server CPU per request', 'trivium TCP direct', 'raw net echo (ceiling)')
    row(
      '  same request bytes (secure)',
      'trivium TCP direct',
      'raw net echo (ceiling)',
      'auth TCP direct',
      'raw net, secure frames (ceiling)',
    )
    cpuRow(
      '  by server CPU, same bytes',
      'trivium TCP direct',
      'raw net echo (ceiling)',
      'auth TCP direct',
      'raw net, secure frames (ceiling)',
    )
    cpuRow(
      'TCP inject / HTTP by server CPU',
      'trivium TCP inject',
      'trivium HTTP',
      'auth TCP inject',
      'auth HTTP',
    )
    // Issue 41: a named Fastify route costs what TCP inject of an endpoint costs (the same bridge).
    const named = (label, a) =>
      console.log(
        label.padEnd(32),
        ratio(a, 'trivium TCP inject').padStart(5),
        cpuRatio(a, 'trivium TCP inject').padStart(8),
      )
    console.log('named route / TCP inject (≥ 1.0)  req/s  by server CPU')
    named('  named route over TCP', 'named route TCP direct')
    named('  named route over WebSocket', 'named route WebSocket')
  }
} finally {
  for (const { server } of trees) {
    server.kill('SIGTERM')
    await once(server, 'exit')
  }
}
