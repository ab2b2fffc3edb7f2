// Issue 11: the cost of going distributed. Throughput of an authenticated endpoint (GET /tasks?limit=1
// with a Bearer token: JWT check, revocation lookup, RBAC from the token, rate-limit hit, one SELECT)
//   - on one demo instance with the embedded defaults (PGlite, in-memory revocation and rate limits),
//   - on one instance with PostgreSQL and in-memory stores (separates the database engine),
//   - on one instance with PostgreSQL and Redis (revocation EXISTS + rate-limit Lua script per request),
//   - on two instances with PostgreSQL and Redis, the load split over both (one wrk per instance at the
//     same time, the connections split, requests/s summed),
// as ratios to the first. Servers are pinned to CPU 0 (both instances share it: same CPU budget for every
// case), wrk to CPU 1; PostgreSQL and Redis are not pinned. Needs the local PostgreSQL and Redis.
// On 2 cores this is a cost-per-request measure, not a scaling one: README.md here says how to see
// N-instance scaling on a bigger machine (BENCH_SERVER_CPUS, BENCH_LOAD_CPUS).
// BENCH_ROUNDS (default 3), BENCH_DURATION (s, default 3), BENCH_CONNECTIONS (default 50, split over
// the instances of a case) as the other suites.

import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cpuMs, loadParallel, median, requireWrk, startServer } from '../lib/harness.mjs'

requireWrk()

const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION = Number(process.env.BENCH_DURATION ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ADMIN_PASSWORD = 'Adm1n!Passw0rd'
// Bigger machines (README.md): instances of the last case, the CPUs of each instance (taskset lists
// separated by spaces, one per instance, cycled; the 1-instance cases use the first), the CPUs of the load
// generators and wrk threads per wrk process.
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 2)
const SERVER_CPUS = (process.env.BENCH_SERVER_CPUS ?? '0').trim().split(/\s+/)
const LOAD_CPUS = process.env.BENCH_LOAD_CPUS ?? '1'
const WRK_THREADS = Number(process.env.BENCH_WRK_THREADS ?? 1)
const instanceCpus = Array.from({ length: INSTANCES }, (_, i) => SERVER_CPUS[i % SERVER_CPUS.length])
const sharedCpu = new Set(instanceCpus).size === 1

/** One wrk per URL at the same time, the connections split between them; requests/s summed. */
async function load(urls, headers, duration) {
  const r = await loadParallel(
    urls.map((url, i) => ({
      url,
      headers,
      duration,
      cpus: LOAD_CPUS,
      threads: WRK_THREADS,
      connections: Math.floor(CONNECTIONS / urls.length) + (i < CONNECTIONS % urls.length ? 1 : 0),
    })),
  )
  return { rps: r.rps, total: r.total, non2xx: r.non2xx, errors: r.errors, p99: r.latency.p99 }
}

// Server CPU per request (the instances' own processes) next to Redis's CPU per request: the 1/rps
// difference also holds whatever Redis and PostgreSQL took from the shared cores.
const pidOf = new Map() // base URL → server pid
const redisPid = (() => {
  try {
    return Number(execFileSync('pgrep', ['-o', 'redis-server'], { encoding: 'utf8' }).trim()) || undefined
  } catch {
    return undefined
  }
})()
const cpuOf = (pids) => pids.reduce((sum, pid) => sum + cpuMs(pid), 0)

const id = randomBytes(5).toString('hex')
const schema = `bench_scale_${id}`
const prefix = `bench:scale:${id}:`
const dataDir = mkdtempSync(join(tmpdir(), 'trivium-bench-scale-'))
const common = {
  SIGNING_SECRET: 'bench-scale-signing-secret-0123456789abcdef0123456789',
  ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
  HASH_SALT: 'bench-scale-hash-salt-0123456789abcdef',
  ADMIN_PASSWORD,
  DATABASE_URL: '',
  REDIS_URL: '',
  LOG_LEVEL: 'silent',
}
const script = new URL('./server.mjs', import.meta.url).pathname
const servers = []
async function start(env, instance = 0) {
  const s = await startServer(
    script,
    { ...common, ...env },
    { cpus: instanceCpus[instance] ?? SERVER_CPUS[0] },
  )
  servers.push(s)
  const base = `http://127.0.0.1:${s.port}`
  pidOf.set(base, s.pid)
  return base
}

async function tokenFor(base) {
  const res = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  })
  if (res.status !== 200) throw new Error(`login failed on ${base}: ${await res.text()}`)
  const { accessToken } = await res.json()
  const task = await fetch(`${base}/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
    body: JSON.stringify({ title: 'bench' }),
  })
  if (task.status !== 201) throw new Error(`create failed on ${base}: ${await task.text()}`)
  return accessToken
}

async function cleanup() {
  await Promise.all(servers.map((s) => s.stop()))
  rmSync(dataDir, { recursive: true, force: true })
  const { default: pg } = await import('../../apps/demo/node_modules/pg/lib/index.js')
  for (const s of [schema, `${schema}_mem`]) {
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
    await client.end()
  }
  const { Redis } = await import('../../apps/demo/node_modules/ioredis/built/index.js')
  const redis = new Redis(REDIS_URL)
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
}

try {
  const distributed = { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema, REDIS_URL, REDIS_PREFIX: prefix }
  const embedded = await start({ DATA_DIR: dataDir })
  const pgMemory = await start({ DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: `${schema}_mem` })
  const instances = await Promise.all(Array.from({ length: INSTANCES }, (_, i) => start(distributed, i)))
  const a = instances[0]
  const path = '/tasks?limit=1'
  const cases = [
    { name: '1 instance, PGlite + memory stores', urls: [embedded + path], token: await tokenFor(embedded) },
    { name: '1 instance, PostgreSQL + memory', urls: [pgMemory + path], token: await tokenFor(pgMemory) },
    { name: '1 instance, PostgreSQL + Redis', urls: [a + path] },
    { name: `${INSTANCES} instances, PostgreSQL + Redis`, urls: instances.map((base) => base + path) },
  ]
  const shared = await tokenFor(a) // signed by A, accepted by the others (same secret, shared revocation list)
  for (const c of cases) c.token ??= shared

  for (const c of cases) c.pids = c.urls.map((u) => pidOf.get(new URL(u).origin))
  const samples = Object.fromEntries(cases.map((c) => [c.name, []]))
  const serverCpu = Object.fromEntries(cases.map((c) => [c.name, []]))
  const redisCpu = Object.fromEntries(cases.map((c) => [c.name, []]))
  const p99s = Object.fromEntries(cases.map((c) => [c.name, []]))
  for (const c of cases) await load(c.urls, { authorization: `Bearer ${c.token}` }, 1) // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of cases) {
      const cpu0 = cpuOf(c.pids)
      const redis0 = redisPid ? cpuMs(redisPid) : Number.NaN
      const { rps, total, non2xx, errors, p99 } = await load(
        c.urls,
        { authorization: `Bearer ${c.token}` },
        DURATION,
      )
      serverCpu[c.name].push(((cpuOf(c.pids) - cpu0) * 1000) / total)
      redisCpu[c.name].push((((redisPid ? cpuMs(redisPid) : Number.NaN) - redis0) * 1000) / total)
      if (non2xx > 0 || errors > 0) console.warn(`  ! ${c.name}: ${non2xx} non-2xx, ${errors} errors`)
      samples[c.name].push(rps)
      p99s[c.name].push(p99)
    }
  }
  const base = median(samples[cases[0].name])
  console.log(
    `\nscale: GET ${path} with a Bearer token (${ROUNDS} interleaved rounds × ${DURATION}s, ${CONNECTIONS} connections, medians; servers on CPU ${sharedCpu ? `${SERVER_CPUS[0]}, shared` : instanceCpus.join(' / ')}, wrk on ${LOAD_CPUS})`,
  )
  console.log(
    'case'.padEnd(40),
    'req/s'.padStart(8),
    'p99 ms'.padStart(8),
    'ratio'.padStart(7),
    'server CPU µs/req'.padStart(18),
    'Redis CPU µs/req'.padStart(17),
  )
  for (const c of cases) {
    const m = median(samples[c.name])
    console.log(
      c.name.padEnd(40),
      String(Math.round(m)).padStart(8),
      median(p99s[c.name]).toFixed(2).padStart(8),
      (m / base).toFixed(2).padStart(7),
      median(serverCpu[c.name]).toFixed(1).padStart(18),
      median(redisCpu[c.name]).toFixed(1).padStart(17),
    )
  }
  const us = (x, y) => (1e6 / median(samples[y]) - 1e6 / median(samples[x])).toFixed(1)
  console.log(`\ncost per request on one core (1/rps difference):`)
  console.log(`  PostgreSQL instead of PGlite:      ${us(cases[0].name, cases[1].name)} µs`)
  console.log(`  Redis revocation + rate limit:     ${us(cases[1].name, cases[2].name)} µs`)
  const cpu = (x, y, of) => (median(of[y]) - median(of[x])).toFixed(1)
  console.log(
    `    of which server CPU ${cpu(cases[1].name, cases[2].name, serverCpu)} µs, Redis CPU ${cpu(cases[1].name, cases[2].name, redisCpu)} µs`,
  )
  if (sharedCpu)
    console.log(
      `  ${INSTANCES - 1} more instance(s) on the same core: ${us(cases[2].name, cases[3].name)} µs`,
    )
  else {
    const factor = median(samples[cases[3].name]) / median(samples[cases[2].name])
    console.log(`  scaling: ${INSTANCES} instances on their own CPUs / 1 instance: ${factor.toFixed(2)}×`)
  }
} finally {
  await cleanup()
}
