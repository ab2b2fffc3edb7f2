// The demo's idle memory (issue 19): RSS of `node dist/server.js` (apps/demo, built, embedded defaults)
// sampled every second for BENCH_MEMORY_SECONDS (default 45) with nothing to do, on
//   - a first start (PGlite initialises a new data directory, the admin account is created and hashed),
//   - a restart on that directory,
//   - PostgreSQL (DATABASE_URL, a schema of its own) instead of PGlite,
// each reported as the RSS 5 s after the demo is up, the peak from then on, and the settled figure (the
// last sample; seconds counted from the demo's start-up message, whatever the load): V8 shrinks its
// young generation and gives memory back some seconds after start-up work stops ("memory reducer"), so a
// sample taken in the first seconds reads start-up, not idle.
// BENCH_DEMO_DIR: another demo checkout (e.g. an older commit's apps/demo, built) measured the same way.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

const SECONDS = Number(process.env.BENCH_MEMORY_SECONDS ?? 45)
const demoDir = process.env.BENCH_DEMO_DIR ?? new URL('../../apps/demo/', import.meta.url).pathname
const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = `bench_memory_${randomBytes(5).toString('hex')}`
const dataDir = mkdtempSync(join(tmpdir(), 'trivium-bench-memory-'))

const rssMiB = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : Number.NaN
}

async function idleRss(env) {
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: demoDir,
    env: { ...process.env, PORT: '0', TCP_PORT: '0', LOG_LEVEL: 'silent', TRIVIUM_PRINT_PORTS: '1', ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  // The seconds are counted from the moment the demo is up (it prints its ports): at a machine's load
  // of 40 the start alone takes minutes, and a count from the spawn read a half-started process.
  let up = false
  let out = ''
  child.stdout.on('data', (chunk) => {
    out += chunk
    if (out.includes('TRIVIUM_PORTS')) up = true
  })
  const samples = []
  let upAt = 0
  try {
    while (!up) {
      await sleep(200)
      if (child.exitCode !== null) throw new Error(`the demo exited with ${child.exitCode}`)
      samples.push(rssMiB(child.pid))
    }
    upAt = samples.length // the peak includes the start-up's samples (every 200 ms)
    for (let s = 1; s <= SECONDS; s++) {
      await sleep(1000)
      if (child.exitCode !== null) throw new Error(`the demo exited with ${child.exitCode}`)
      samples.push(rssMiB(child.pid))
    }
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
  return { at5: samples[upAt + 4], peak: Math.max(...samples), settled: samples.at(-1) }
}

async function dropSchema() {
  const { default: pg } = await import(`${demoDir}/node_modules/pg/lib/index.js`)
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await client.end()
}

try {
  const cases = [
    ['embedded PGlite, first start', { DATA_DIR: dataDir }],
    ['embedded PGlite, restart', { DATA_DIR: dataDir }],
    ['PostgreSQL', { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema }],
  ]
  console.log(`\nmemory: the demo's RSS with nothing to do (MiB, sampled every second for ${SECONDS} s)`)
  console.log('case'.padEnd(32), 'at 5 s'.padStart(8), 'peak'.padStart(8), 'settled'.padStart(8))
  for (const [name, env] of cases) {
    const r = await idleRss(env)
    console.log(
      name.padEnd(32),
      r.at5.toFixed(0).padStart(8),
      r.peak.toFixed(0).padStart(8),
      r.settled.toFixed(0).padStart(8),
    )
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true })
  await dropSchema()
}
