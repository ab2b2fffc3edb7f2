// What bench/density and bench/fanout share: a demo instance (apps/demo, built, embedded PGlite) of one
// checkout, pinned to CPU 0, whose heap after GC and RSS are read inside it; and many raw frame sessions
// (WebSocket or TCP) opened from this process, spread over loopback source addresses because the demo
// keeps the default cap of 100 connections per address (the cap itself is not what is measured).
// Raw sockets, not @trivium/client: the client side must cost little per session and per frame, so the
// figures read the server. `BENCH_BEFORE=<another checkout, built>` names the tree measured beside this one.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const here = new URL('../../', import.meta.url).pathname
const WebSocket = createRequire(join(here, 'packages/websocket/package.json'))('ws')
const { encodeWsFrame, encodeTcpFrame, encodeMetadata } = await import(
  join(here, 'packages/wire/dist/index.js')
)

/** The trees to measure: this checkout, and BENCH_BEFORE's when given (labelled `before`). */
export function trees() {
  const list = [{ label: 'now', dir: here }]
  if (process.env.BENCH_BEFORE) list.unshift({ label: 'before', dir: process.env.BENCH_BEFORE })
  return list
}

export const FrameType = { REQUEST: 1, RESPONSE: 2, ERROR: 3, STREAM_ITEM: 4, STREAM_END: 5 }
/** Connections per loopback source address: under the demo's default cap of 100. */
const PER_ADDRESS = 90
const PASSWORD = 'Str0ng!Passw0rd'
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

const PROBE = join(here, 'bench/lib/gc-probe.mjs')

/** One demo instance of the checkout `dir` on random ports, its memory readable with `memory()`. */
export async function startDemo(dir, env = {}) {
  const data = mkdtempSync(join(tmpdir(), 'trivium-bench-sessions-'))
  const schema = `bench_sessions_${randomBytes(5).toString('hex')}`
  const server = await startServer(join(dir, 'apps/demo/dist/server.js'), {
    HOST: '127.0.0.1',
    PORT: '0',
    TCP_PORT: '0',
    TRIVIUM_PRINT_PORTS: '1',
    LOG_LEVEL: 'warn',
    DATA_DIR: join(data, 'db'),
    // PostgreSQL (a schema of its own, dropped at stop): a start in seconds, and PGlite's own
    // memory is not in the figures. BENCH_DATABASE_URL= (empty) for the embedded PGlite.
    ...(DATABASE_URL ? { DATABASE_URL, DATABASE_SCHEMA: schema } : {}),
    RATE_LIMIT_DEFAULT: '100000000/60s',
    ...env,
  })
  const base = `http://127.0.0.1:${server.ports.http}`
  return {
    ...server,
    base,
    /** Registers a user and logs in: its access token. */
    async login() {
      const username = `bench_${randomBytes(3).toString('hex')}`
      await post(base, '/auth/register', { username, email: `${username}@example.com`, password: PASSWORD })
      return (await post(base, '/auth/login', { username, password: PASSWORD })).accessToken
    },
    async stop() {
      await server.stop()
      rmSync(data, { recursive: true, force: true })
      if (DATABASE_URL) await dropSchema(dir, schema)
    },
  }
}

/**
 * The floor (bench/lib/raw-server.mjs): bare `ws` and `net` servers that answer each frame and hold
 * nothing of their own per connection; the same interface as `startDemo` (its token is not checked).
 */
export async function startRaw() {
  const server = await startServer(join(here, 'bench/lib/raw-server.mjs'), {})
  return { ...server, base: `http://127.0.0.1:${server.http}`, login: async () => 'raw' }
}

/**
 * A server process (`script`, env added to this one's) with the memory probe preloaded, pinned to CPU 0
 * once it printed `TRIVIUM_PORTS {json}`: its ports, its CPU time, its memory, and its window (the
 * probe's `BENCH_WINDOW`: garbage collections, and a CPU profile with BENCH_CPU_PROFILE_DIR).
 */
export async function startServer(script, env) {
  const proc = spawn(process.execPath, ['--max-old-space-size=4096', script], {
    env: {
      ...process.env,
      NODE_ENV: '',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${PROBE}`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const waiters = new Set()
  const onData = (chunk) => {
    out = (out + chunk).slice(-100_000)
    for (const waiter of waiters) waiter()
  }
  proc.stdout.on('data', onData)
  proc.stderr.on('data', onData)
  const until = (pattern, ms, what) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out)
        if (!m) return
        done()
        out = out.slice(m.index + m[0].length)
        resolve(m)
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`${what}: nothing within ${ms} ms:\n${out}`))
      }, ms)
      const done = () => {
        clearTimeout(timer)
        waiters.delete(check)
      }
      waiters.add(check)
      check()
    })
  const ports = JSON.parse((await until(/TRIVIUM_PORTS (\{.*\})/, 300_000, 'demo start'))[1])
  // Pinned once started (every thread): the start-up (PGlite's first run) may use both CPUs.
  spawnSync('taskset', ['-a', '-p', '-c', '0', String(proc.pid)], { stdio: 'ignore' })
  return {
    ports,
    pid: proc.pid,
    http: ports.http,
    tcp: ports.tcp,
    /**
     * Sessions' connections (from 127.1.x.x, `openSession`) to the server that the server has not closed
     * yet (the kernel's view, /proc/net/tcp: ESTABLISHED or CLOSE_WAIT on its side): a condition to wait
     * on after closing clients.
     */
    openConnections() {
      return openConnections([ports.http, ports.tcp].filter(Boolean))
    },
    /** CPU time (user + system, ms) the server has used so far (Linux /proc; 10 ms resolution). */
    cpuMs() {
      const fields = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ')
      return (Number(fields[11]) + Number(fields[12])) * 10
    },
    /** Heap after GC, RSS, external and ArrayBuffer bytes of the server. */
    async memory() {
      // A heap snapshot of the demo takes minutes at a load of 40.
      const ms = process.env.BENCH_HEAP_SNAPSHOT_DIR ? 600_000 : 60_000
      const seen = until(/BENCH_MEMORY (\{.*\})/, ms, 'memory sample')
      proc.kill('SIGUSR2')
      return JSON.parse((await seen)[1])
    },
    /** Opens the probe's window (call `close()` on the result): what the server did in between. */
    async window() {
      const opened = until(/BENCH_WINDOW_OPEN/, 60_000, 'window open')
      proc.kill('SIGWINCH')
      await opened
      return {
        async close() {
          const seen = until(/BENCH_WINDOW (\{.*\})/, 60_000, 'window summary')
          proc.kill('SIGWINCH')
          return JSON.parse((await seen)[1])
        },
      }
    },
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      proc.kill('SIGKILL')
      await exited
    },
  }
}

/**
 * Server-side sockets on `ports` (IPv4) from 127.1.x.x (little-endian hex `....017F`) in state
 * ESTABLISHED (01) or CLOSE_WAIT (08). Not the bench's own HTTP client (fetch keeps its connection).
 */
function openConnections(ports) {
  const wanted = new Set(ports.map((p) => p.toString(16).toUpperCase().padStart(4, '0')))
  let count = 0
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n')) {
    const [, local, remote, state] = line.trim().split(/\s+/)
    if (local === undefined || remote === undefined || !wanted.has(local.slice(-4))) continue
    if (remote.slice(4, 8) === '017F' && (state === '01' || state === '08')) count++
  }
  return count
}

async function dropSchema(dir, schema) {
  const pg = createRequire(join(dir, 'apps/demo/package.json'))('pg')
  const db = new pg.Client({ connectionString: DATABASE_URL })
  await db.connect()
  await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await db.end()
}

export async function post(base, path, body, token) {
  const headers = { 'content-type': 'application/json' }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) })
  const json = await res.json().catch(() => undefined)
  if (res.status >= 400) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

function sourceAddress(index) {
  const k = Math.floor(index / PER_ADDRESS)
  return `127.1.${k >> 8}.${(k & 255) + 1}`
}

/**
 * A raw frame session: `request(id, endpoint)` sends a REQUEST with `{}` (JSON, authenticated with
 * `token`); `onFrame(type, id, frame)` is called for every frame received (`frame`: its type byte, id and
 * body, as on WebSocket; a view, valid during the call). Resolves once connected.
 */
export function openSession(transport, demo, token, index, onFrame) {
  return transport === 'tcp'
    ? tcpSession(demo, token, index, onFrame)
    : wsSession(demo, token, index, onFrame)
}

const EMPTY_JSON = new TextEncoder().encode('{}')

function wsSession(demo, token, index, onFrame) {
  const url = `ws://127.0.0.1:${demo.http}/ws?format=json&token=${encodeURIComponent(token)}`
  const ws = new WebSocket(url, { perMessageDeflate: false, localAddress: sourceAddress(index) })
  ws.on('message', (data) => onFrame(data[0], data.readUInt32BE(1), data))
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.removeAllListeners('error')
      ws.on('error', () => {})
      resolve({
        request: (id, endpoint) =>
          ws.send(encodeWsFrame({ type: FrameType.REQUEST, requestId: id, endpoint, payload: EMPTY_JSON })),
        close: () => ws.terminate(),
      })
    })
    ws.once('error', reject)
  })
}

function tcpSession(demo, token, index, onFrame) {
  const meta = encodeMetadata({ format: 'json', auth_token: token })
  const payload = new Uint8Array(meta.length + EMPTY_JSON.length)
  payload.set(meta)
  payload.set(EMPTY_JSON, meta.length)
  const socket = connect({ port: demo.tcp, host: '127.0.0.1', localAddress: sourceAddress(index) })
  socket.setNoDelay(true)
  let rest
  socket.on('data', (chunk) => {
    const data = rest === undefined ? chunk : Buffer.concat([rest, chunk])
    let offset = 0
    while (data.length - offset >= 9) {
      const length = data.readUInt32BE(offset)
      if (data.length - offset < 4 + length) break
      onFrame(data[offset + 8], data.readUInt32BE(offset + 4), data.subarray(offset + 8, offset + 4 + length))
      offset += 4 + length
    }
    rest = offset < data.length ? Buffer.from(data.subarray(offset)) : undefined
  })
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      socket.removeAllListeners('error')
      socket.on('error', () => {})
      resolve({
        request: (id, endpoint) =>
          socket.write(encodeTcpFrame({ type: FrameType.REQUEST, requestId: id, endpoint, payload })),
        close: () => socket.destroy(),
      })
    })
    socket.once('error', reject)
  })
}

/** Runs `task(i)` for i in [from, to) with at most `width` at a time. */
export async function inBatches(from, to, width, task) {
  let next = from
  const worker = async () => {
    while (next < to) await task(next++)
  }
  await Promise.all(Array.from({ length: Math.min(width, to - from) }, worker))
}

/** Resolves when `check()` is true (polled every `every` ms), rejects after `ms`. */
export async function waitFor(check, ms, what, every = 20) {
  const end = performance.now() + ms
  while (!check()) {
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, every))
  }
}

export const kib = (bytes) => (bytes / 1024).toFixed(2)
