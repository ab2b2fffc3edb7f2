// The demo's memory under load (issue 44): heap after GC of one demo instance (apps/demo, built) on its
// embedded defaults (PGlite in a temporary DATA_DIR) while clients call it steadily on HTTP, WebSocket and
// TCP, with connections closed and opened again and `tasks.watch` subscriptions delivering every change,
// then left idle. A server that keeps something per call or per delivered item shows as heap that
// grows with the calls and does not come back when idle; a flat server shows a few MiB of noise.
//
//   npx pnpm build && node bench/soak/run.mjs
//   env: SOAK_SECONDS=180 (under load)  SOAK_IDLE_SECONDS=60  SOAK_RATE=300 (calls/s in all)
//        SOAK_SAMPLE_SECONDS=30  SOAK_DATABASE_URL=postgres://… (PostgreSQL instead of PGlite)
//
// The heap is read inside the server: a module preloaded with --import (NODE_OPTIONS) exposes `gc`
// and, on SIGUSR2, runs full collections and prints `BENCH_MEMORY {json}` (bench/lib/gc-probe.mjs). Not a test: it prints
// the figures, and exits 1 when the heap grew by more than SOAK_MAX_BYTES_PER_CALL (default 64) per call
// between the first sample under load and the idle one.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { Instance, stopAll } from '../faults/processes.mjs'

const { createClient } = await import(new URL('../../packages/client/dist/node.js', import.meta.url))
const { endpoints } = await import(new URL('../../apps/demo/dist/generated/endpoints.js', import.meta.url))

const SECONDS = Number(process.env.SOAK_SECONDS ?? 180)
const IDLE_SECONDS = Number(process.env.SOAK_IDLE_SECONDS ?? 60)
const RATE = Number(process.env.SOAK_RATE ?? 300)
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 30)
const MAX_PER_CALL = Number(process.env.SOAK_MAX_BYTES_PER_CALL ?? 64)
/** Calls a WebSocket or TCP client makes before it is closed and a new one opened (connection churn). */
const CHURN_CALLS = 500
/** Workers per transport, each with one call in flight at a time (one alone cannot keep the rate up). */
const WORKERS = 3
const PASSWORD = 'Str0ng!Passw0rd'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const probe = new URL('../lib/gc-probe.mjs', import.meta.url).pathname

let instance
const stats = { calls: 0, errors: 0, events: 0, reconnects: 0, lastError: '' }

/** Heap after GC and RSS of the server, in bytes. */
async function sample() {
  const seen = new Promise((resolve) => {
    let out = ''
    const onData = (chunk) => {
      out += chunk
      const m = /BENCH_MEMORY (\{.*\})/.exec(out)
      if (!m) return
      instance.proc.stdout.off('data', onData)
      resolve(JSON.parse(m[1]))
    }
    instance.proc.stdout.on('data', onData)
  })
  instance.signal('SIGUSR2')
  return seen
}

async function http(method, path, token, body) {
  const headers = { 'content-type': 'application/json' }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(instance.base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = await res.json().catch(() => undefined)
  if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

function frameClient(transport, token) {
  const client = createClient({
    transport,
    ...instance.frameAddress(transport),
    endpoints,
    token,
    timeoutMs: 10_000,
  })
  client.on('error', () => {})
  return client
}

/** A `tasks.watch` subscription on `client` counting the events it delivers, until the client closes. */
function watch(client) {
  void (async () => {
    try {
      for await (const _event of client.stream('tasks.watch', {})) stats.events++
    } catch {} // the client closed (churn)
  })()
}

/** One worker per transport: calls at its share of RATE, alternating a create and a page of the list. */
function worker(transport, token, share, until) {
  return (async () => {
    let client
    let made = 0
    const interval = 1000 / share
    let next = performance.now()
    while (performance.now() < until) {
      if (transport !== 'http' && (client === undefined || made % CHURN_CALLS === 0)) {
        if (client !== undefined) {
          await client.close().catch(() => {})
          stats.reconnects++
        }
        client = frameClient(transport, token)
        await client.connect()
        watch(client)
      }
      try {
        const create = made % 2 === 0
        if (transport === 'http') {
          if (create) await http('POST', '/tasks', token, { title: `soak ${made}` })
          else await http('GET', '/tasks?limit=20', token)
        } else if (create) await client.call('tasks.create', { title: `soak ${made}` })
        else await client.call('tasks.list', { limit: 20 })
        stats.calls++
      } catch (err) {
        stats.errors++
        stats.lastError = `${transport}: ${err.message}`
      }
      made++
      next += interval
      const wait = next - performance.now()
      if (wait > 0) await sleep(wait)
    }
    await client?.close().catch(() => {})
  })()
}

function mib(bytes) {
  return (bytes / 1024 / 1024).toFixed(1)
}

const schema = `soak_${randomBytes(5).toString('hex')}`
try {
  // A limit far above the load: the rate limiter's own state is part of what is measured.
  const env = {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${probe}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_DEFAULT: '1000000/60s',
  }
  if (process.env.SOAK_DATABASE_URL) {
    env.DATABASE_URL = process.env.SOAK_DATABASE_URL
    env.DATABASE_SCHEMA = schema
  }
  instance = await Instance.start('soak', env)
  const username = `soak_${randomBytes(3).toString('hex')}`
  await http('POST', '/auth/register', undefined, {
    username,
    email: `${username}@example.com`,
    password: PASSWORD,
  })
  const { accessToken } = await http('POST', '/auth/login', undefined, { username, password: PASSWORD })
  const engine = process.env.SOAK_DATABASE_URL ? 'PostgreSQL' : 'embedded PGlite'
  console.log(
    `soak: demo on ${engine}, ${RATE} calls/s over HTTP, WebSocket and TCP for ${SECONDS} s (${WORKERS} workers each; a WebSocket/TCP worker opens a new connection every ${CHURN_CALLS} calls, each with a tasks.watch subscription), then ${IDLE_SECONDS} s idle`,
  )
  console.log(
    'at s'.padStart(6),
    'calls'.padStart(9),
    'events'.padStart(9),
    'heap MiB'.padStart(9),
    'rss MiB'.padStart(9),
  )
  const start = performance.now()
  const until = start + SECONDS * 1000
  const transports = ['http', 'websocket', 'tcp'].flatMap((t) => Array(WORKERS).fill(t))
  const load = Promise.all(transports.map((t) => worker(t, accessToken, RATE / transports.length, until)))
  const rows = []
  const row = async (label) => {
    const s = await sample()
    rows.push({ ...s, calls: stats.calls })
    console.log(
      label.padStart(6),
      String(stats.calls).padStart(9),
      String(stats.events).padStart(9),
      mib(s.heap).padStart(9),
      mib(s.rss).padStart(9),
    )
  }
  await sleep(Math.min(10, SECONDS / 4) * 1000) // warm-up: compiled code, caches, pools
  await row(((performance.now() - start) / 1000).toFixed(0))
  while (performance.now() + SAMPLE_SECONDS * 1000 < until) {
    await sleep(SAMPLE_SECONDS * 1000)
    await row(((performance.now() - start) / 1000).toFixed(0))
  }
  await load
  await row('end')
  await sleep(IDLE_SECONDS * 1000)
  await row('idle')
  const first = rows[0]
  const last = rows[rows.length - 1]
  const perCall = (last.heap - first.heap) / Math.max(1, last.calls - first.calls)
  console.log(
    `heap after GC ${mib(first.heap)} → ${mib(last.heap)} MiB over ${last.calls - first.calls} calls: ${perCall.toFixed(1)} B per call (bound ${MAX_PER_CALL}); ${stats.errors} errors${stats.errors ? ` (last: ${stats.lastError})` : ''}, ${stats.reconnects} reconnections`,
  )
  process.exitCode = perCall > MAX_PER_CALL || stats.errors > 0 ? 1 : 0
} finally {
  await stopAll()
  if (process.env.SOAK_DATABASE_URL) {
    const pg = createRequire(new URL('../../apps/demo/package.json', import.meta.url))('pg')
    const db = new pg.Client({ connectionString: process.env.SOAK_DATABASE_URL })
    await db.connect()
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await db.end()
  }
}
