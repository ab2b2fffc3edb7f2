// Issue 11: the cost of going distributed. Throughput of an authenticated endpoint (GET /tasks?limit=1
// with a Bearer token: JWT check, revocation lookup, RBAC from the token, rate-limit hit, one SELECT)
//   - on one demo instance with the embedded defaults (PGlite, in-memory revocation and rate limits),
//   - on one instance with PostgreSQL and in-memory stores (separates the database engine),
//   - on one instance with PostgreSQL and Redis (revocation EXISTS + rate-limit Lua script per request),
//   - on two instances with PostgreSQL and Redis, the load split over both (autocannon round-robins
//     its connections over the two URLs),
// as ratios to the first. Servers are pinned to CPU 0 (both instances share it: same CPU budget for every
// case), autocannon to CPU 1; PostgreSQL and Redis are not pinned. Needs the local PostgreSQL and Redis.
// BENCH_ROUNDS (default 3) and BENCH_DURATION (s, default 3) as the other suites.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { median, startServer } from '../lib/harness.mjs'

const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION = Number(process.env.BENCH_DURATION ?? 3)
const CONNECTIONS = 50
const ADMIN_PASSWORD = 'Adm1n!Passw0rd'

const require = createRequire(import.meta.url)
const autocannonBin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js')
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0

/** autocannon on CPU 1 against one or more URLs (connections spread round-robin over them). */
function load(urls, headers, duration) {
  const args = [autocannonBin, '-j', '-d', String(duration), '-c', String(CONNECTIONS)]
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`)
  args.push(...urls)
  const [cmd, cmdArgs] = hasTaskset
    ? ['taskset', ['-c', '1', process.execPath, ...args]]
    : [process.execPath, args]
  const out = spawnSync(cmd, cmdArgs, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  if (out.status !== 0) throw new Error(`autocannon failed: ${out.stderr}`)
  const r = JSON.parse(out.stdout)
  return { rps: r.requests.average, non2xx: r.non2xx, errors: r.errors, p99: r.latency.p99 }
}

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
async function start(env) {
  const s = await startServer(script, { ...common, ...env })
  servers.push(s)
  return `http://127.0.0.1:${s.port}`
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
  const [a, b] = await Promise.all([start(distributed), start(distributed)])
  const path = '/tasks?limit=1'
  const cases = [
    { name: '1 instance, PGlite + memory stores', urls: [embedded + path], token: await tokenFor(embedded) },
    { name: '1 instance, PostgreSQL + memory', urls: [pgMemory + path], token: await tokenFor(pgMemory) },
    { name: '1 instance, PostgreSQL + Redis', urls: [a + path] },
    { name: '2 instances, PostgreSQL + Redis', urls: [a + path, b + path] },
  ]
  const shared = await tokenFor(a) // signed by A, accepted by B (same secret, shared revocation list)
  for (const c of cases) c.token ??= shared

  const samples = Object.fromEntries(cases.map((c) => [c.name, []]))
  const p99s = Object.fromEntries(cases.map((c) => [c.name, []]))
  for (const c of cases) load(c.urls, { authorization: `Bearer ${c.token}` }, 1) // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of cases) {
      const { rps, non2xx, errors, p99 } = load(c.urls, { authorization: `Bearer ${c.token}` }, DURATION)
      if (non2xx > 0 || errors > 0) console.warn(`  ! ${c.name}: ${non2xx} non-2xx, ${errors} errors`)
      samples[c.name].push(rps)
      p99s[c.name].push(p99)
    }
  }
  const base = median(samples[cases[0].name])
  console.log(
    `\nscale: GET ${path} with a Bearer token (${ROUNDS} interleaved rounds × ${DURATION}s, ${CONNECTIONS} connections, medians; servers share CPU 0)`,
  )
  console.log('case'.padEnd(40), 'req/s'.padStart(8), 'p99 ms'.padStart(8), 'ratio'.padStart(7))
  for (const c of cases) {
    const m = median(samples[c.name])
    console.log(
      c.name.padEnd(40),
      String(Math.round(m)).padStart(8),
      String(median(p99s[c.name])).padStart(8),
      (m / base).toFixed(2).padStart(7),
    )
  }
  const us = (x, y) => (1e6 / median(samples[y]) - 1e6 / median(samples[x])).toFixed(1)
  console.log(`\ncost per request on one core (1/rps difference):`)
  console.log(`  PostgreSQL instead of PGlite:      ${us(cases[0].name, cases[1].name)} µs`)
  console.log(`  Redis revocation + rate limit:     ${us(cases[1].name, cases[2].name)} µs`)
  console.log(`  second instance on the same core:  ${us(cases[2].name, cases[3].name)} µs`)
} finally {
  await cleanup()
}
