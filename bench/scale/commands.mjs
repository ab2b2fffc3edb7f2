// Redis commands per authenticated request, the figure of bench/scale that CPU contention cannot distort:
// one demo instance on PostgreSQL + Redis (as in run.mjs), N requests GET /tasks?limit=1 with a Bearer
// token, and every command Redis receives with this run's key prefix counted with MONITOR (commands run
// inside a Lua script are listed separately: they are not round trips). Heartbeats of the revocation
// mirror carry no key prefix in their arguments but travel on the run's channel: counted as PUBLISH.
// `node bench/scale/commands.mjs` (after `pnpm build`); BENCH_REQUESTS (default 2000).
import { randomBytes } from 'node:crypto'
import { startServer } from '../lib/harness.mjs'

const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const N = Number(process.env.BENCH_REQUESTS ?? 2000)
const ADMIN_PASSWORD = 'Adm1n!Passw0rd'
const { Redis } = await import('../../apps/demo/node_modules/ioredis/built/index.js')
const { default: pg } = await import('../../apps/demo/node_modules/pg/lib/index.js')

const id = randomBytes(5).toString('hex')
const schema = `bench_cmds_${id}`
const prefix = `bench:cmds:${id}:`
const server = await startServer(new URL('./server.mjs', import.meta.url).pathname, {
  SIGNING_SECRET: 'bench-scale-signing-secret-0123456789abcdef0123456789',
  ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
  HASH_SALT: 'bench-scale-hash-salt-0123456789abcdef',
  ADMIN_PASSWORD,
  LOG_LEVEL: 'silent',
  DATABASE_URL: POSTGRES_URL,
  DATABASE_SCHEMA: schema,
  REDIS_URL,
  REDIS_PREFIX: prefix,
})
const base = `http://127.0.0.1:${server.port}`
let monitor
try {
  const login = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
  })
  if (login.status !== 200) throw new Error(`login failed: ${await login.text()}`)
  const headers = { authorization: `Bearer ${(await login.json()).accessToken}` }
  const request = async () => {
    const res = await fetch(`${base}/tasks?limit=1`, { headers })
    if (res.status !== 200) throw new Error(`GET /tasks: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  for (let i = 0; i < 200; i++) await request() // warm-up; the revocation mirror is loaded by now
  const inScript = new Set()
  const counts = {}
  // A fresh client (not yet connected): monitor() then opens its own MONITOR connection.
  monitor = new Redis(REDIS_URL)
  const feed = await monitor.monitor()
  feed.on('monitor', (_time, args, source) => {
    if (!args.join(' ').includes(prefix)) return
    const name = `${String(args[0]).toUpperCase()}${source === 'lua' ? ' (in script)' : ''}`
    if (source === 'lua') inScript.add(name)
    counts[name] = (counts[name] ?? 0) + 1
  })
  const started = performance.now()
  let sent = 0
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (sent < N) {
        sent++
        await request()
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  await new Promise((r) => setTimeout(r, 200))
  feed.disconnect()
  const roundTrips = Object.entries(counts)
    .filter(([name]) => !inScript.has(name) && name !== 'PUBLISH')
    .reduce((sum, [, n]) => sum + n, 0)
  console.log(
    `\nscale/commands: ${N} × GET /tasks?limit=1 with a Bearer token, one instance, PostgreSQL + Redis`,
  )
  for (const [name, n] of Object.entries(counts).sort()) {
    console.log(`  ${name.padEnd(24)} ${String(n).padStart(7)}  ${(n / N).toFixed(3)} per request`)
  }
  console.log(
    `  Redis commands per request (round trips, heartbeats excluded): ${(roundTrips / N).toFixed(3)}`,
  )
  console.log(`  heartbeat PUBLISH per second: ${((counts.PUBLISH ?? 0) / seconds).toFixed(1)}`)
} finally {
  monitor?.disconnect()
  await server.stop()
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await client.end()
  const redis = new Redis(REDIS_URL)
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
}
