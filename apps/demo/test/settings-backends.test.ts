// Issue 30 item 8: a DATABASE_URL or REDIS_URL that points at the wrong place stops the start with one line
// naming the setting and the fix (README "Configuration"), never the password, within the start-up check's
// timeout — not "Redis unavailable: not ready within 10000 ms" or "Database unavailable". The built demo is
// spawned as `pnpm start` runs it, against real servers: nothing listening, a private redis-server and a
// private PostgreSQL that require a password, a listener that accepts and never answers, and each
// server's port given to the other setting.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import {
  freePort,
  POSTGRES_URL,
  PrivatePostgres,
  PrivateRedis,
  postgresBinDir,
  REDIS_URL,
  SECRETS,
} from './scale-helpers.js'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))
const CLUSTER = fileURLToPath(new URL('../dist/cluster.js', import.meta.url))
const PREFIX = 'Trivium Tasks failed to start: '
const REDIS_SECRET = 'redis-Secret-4f1e'
const PG_SECRET = 'pg-Secret-9c2d'
const WRONG = 'wrong-Secret-77ab'
// The start-up check waits 5 s for an answer; the rest is a node start-up on a loaded 2-core machine
// (up to 30 s seen at load 25).
const EXIT_WITHIN_MS = 90_000
// Thirteen start-ups, four at a time: more than a few minutes on a loaded machine.
t.setTimeout(15 * 60_000)

interface Run {
  code: number | null
  output: string
  ms: number
}

async function start(env: Record<string, string>, script = SERVER): Promise<Run> {
  const dataDir = mkdtempSync(join(tmpdir(), 'trivium-settings-'))
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) base[k] = v
  for (const k of [
    'DATABASE_URL',
    'DATABASE_SCHEMA',
    'REDIS_URL',
    'REDIS_PREFIX',
    'NODE_ENV',
    'HOST',
    'WORKERS',
  ])
    delete base[k]
  const started = Date.now()
  const proc: ChildProcess = spawn(process.execPath, [script], {
    env: { ...base, ...SECRETS, PORT: '0', TCP_PORT: '-1', DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  proc.stdout!.on('data', (chunk) => {
    output += chunk
  })
  proc.stderr!.on('data', (chunk) => {
    output += chunk
  })
  // A server that started after all is killed (the test then fails on its exit code and output).
  const kill = setTimeout(() => proc.kill('SIGKILL'), 2 * EXIT_WITHIN_MS)
  const [code] = (await once(proc, 'exit')) as [number | null]
  clearTimeout(kill)
  rmSync(dataDir, { recursive: true, force: true })
  return { code, output, ms: Date.now() - started }
}

/** `run` over `items`, at most `limit` at a time; the results in the items' order. */
async function inBatches<T, R>(items: T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await run(items[i]!)
  }
  await Promise.all(Array.from({ length: limit }, worker))
  return results
}

/** A listener that accepts connections and never answers (a firewall, a wrong service that waits). */
async function blackHole(t: Test): Promise<number> {
  const held = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    held.add(socket)
    socket.on('error', () => {})
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    for (const s of held) s.destroy()
    await new Promise<void>((r) => server.close(() => r()))
  })
  return (server.address() as net.AddressInfo).port
}

t.test('a bad REDIS_URL or DATABASE_URL names the setting and the fix in one line', async (t) => {
  const hole = await blackHole(t)
  const closed = await freePort() // nothing listens there
  const redis = await PrivateRedis.create(['--requirepass', REDIS_SECRET])
  t.teardown(() => redis.close())
  // The right password is accepted: the refusal below is the password's.
  const { Redis } = await import('ioredis')
  const client = new Redis(`redis://:${REDIS_SECRET}@127.0.0.1:${redis.port}`)
  t.equal(await client.ping(), 'PONG')
  client.disconnect()
  // The Redis cases run on the machine's PostgreSQL (a fast start), in a schema of their own.
  const schema = `test_settings_${randomBytes(6).toString('hex')}`
  t.teardown(async () => {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.end()
  })
  const pgPort = new URL(POSTGRES_URL).port || '5432'
  const redisPort = new URL(REDIS_URL).port || '6379'
  const onPostgres = { DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: schema }

  const cases: Array<[string, Record<string, string>, string]> = [
    [
      'REDIS_URL: nothing listening',
      { ...onPostgres, REDIS_URL: `redis://127.0.0.1:${closed}` },
      `REDIS_URL: connection refused at 127.0.0.1:${closed} — is Redis running there?`,
    ],
    [
      'REDIS_URL: a wrong password',
      { ...onPostgres, REDIS_URL: `redis://:${WRONG}@127.0.0.1:${redis.port}` },
      'REDIS_URL: authentication failed (WRONGPASS) — check the password in the URL',
    ],
    [
      'REDIS_URL: no password for a Redis that requires one',
      { ...onPostgres, REDIS_URL: `redis://127.0.0.1:${redis.port}` },
      `REDIS_URL: Redis at 127.0.0.1:${redis.port} requires a password (NOAUTH) — put it in the URL: redis://:<password>@127.0.0.1:${redis.port}`,
    ],
    [
      'REDIS_URL: a black hole',
      { ...onPostgres, REDIS_URL: `redis://:${WRONG}@127.0.0.1:${hole}` },
      `REDIS_URL: no answer from 127.0.0.1:${hole} within 5000 ms — is that Redis's port?`,
    ],
    [
      "REDIS_URL: PostgreSQL's port",
      { ...onPostgres, REDIS_URL: `redis://:${WRONG}@127.0.0.1:${pgPort}` },
      `REDIS_URL: 127.0.0.1:${pgPort} closed the connection without answering as Redis — is that Redis's port?`,
    ],
    [
      'DATABASE_URL: nothing listening',
      { DATABASE_URL: `postgres://postgres:${WRONG}@127.0.0.1:${closed}/test` },
      `DATABASE_URL: connection refused at 127.0.0.1:${closed} — is PostgreSQL running there?`,
    ],
    [
      'DATABASE_URL: an unknown database',
      { DATABASE_URL: `postgres://postgres:${WRONG}@127.0.0.1:${pgPort}/nope` },
      'DATABASE_URL: database "nope" does not exist — create it or fix the path',
    ],
    [
      'DATABASE_URL: a black hole',
      { DATABASE_URL: `postgres://postgres:${WRONG}@127.0.0.1:${hole}/test` },
      `DATABASE_URL: no answer from 127.0.0.1:${hole} within 5000 ms — is that PostgreSQL's port?`,
    ],
    [
      "DATABASE_URL: Redis's port",
      { DATABASE_URL: `postgres://postgres:${WRONG}@127.0.0.1:${redisPort}/test` },
      `DATABASE_URL: no answer from 127.0.0.1:${redisPort} within 5000 ms — is that PostgreSQL's port?`,
    ],
  ]
  // Four at a time: each is a node start-up (about a second of CPU) and three wait out the 5 s start-up
  // check; one after the other they took 31 s on an idle machine. The bound below holds on a loaded one.
  const runs = await inBatches(cases, 4, ([, env]) => start(env))
  for (const [i, [name, , line]] of cases.entries()) {
    const run = runs[i]!
    t.not(run.code, 0, `${name}: refuses to start`)
    t.equal(run.output, `${PREFIX}${line}\n`, `${name}: one line, naming the setting and the fix`)
    t.notMatch(run.output, WRONG, `${name}: the password is not printed`)
    t.ok(run.ms < EXIT_WITHIN_MS, `${name}: exits within ${EXIT_WITHIN_MS} ms (took ${run.ms} ms)`)
  }

  // A port already taken (here by the black hole) names its setting too.
  const portRuns = await Promise.all(
    ['PORT', 'TCP_PORT'].map((setting) =>
      start({ ...onPostgres, PORT: '0', TCP_PORT: '0', [setting]: String(hole) }),
    ),
  )
  for (const [i, setting] of ['PORT', 'TCP_PORT'].entries()) {
    const run = portRuns[i]!
    t.not(run.code, 0, `${setting} in use: refuses to start`)
    t.equal(
      run.output,
      `${PREFIX}${setting}: 127.0.0.1:${hole} is already in use — stop what listens there or set another ${setting}\n`,
      `${setting} in use: one line, naming the setting and the fix`,
    )
  }

  // start:cluster checks both settings in its primary, before any worker starts: the same line, its prefix.
  const cluster = await start(
    { ...onPostgres, REDIS_URL: `redis://127.0.0.1:${closed}`, WORKERS: '2' },
    CLUSTER,
  )
  t.not(cluster.code, 0, 'start:cluster refuses to start')
  t.equal(
    cluster.output,
    `Trivium Tasks cluster: REDIS_URL: connection refused at 127.0.0.1:${closed} — is Redis running there?\n`,
    'start:cluster: the same line, before any worker',
  )
})

t.test(
  'DATABASE_URL with a wrong password (a private PostgreSQL with password authentication)',
  { skip: postgresBinDir() ? false : 'no PostgreSQL server binaries under /usr/lib/postgresql' },
  async (t) => {
    const server = await PrivatePostgres.create(PG_SECRET)
    t.teardown(() => server.close())
    // The right password is accepted: the refusal below is the password's.
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: server.url(PG_SECRET) })
    await client.connect()
    t.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1)
    await client.end()

    const run = await start({ DATABASE_URL: server.url(WRONG) })
    t.not(run.code, 0)
    t.equal(
      run.output,
      `${PREFIX}DATABASE_URL: password authentication failed for user "postgres" — check the user and password in the URL\n`,
    )
    t.notMatch(run.output, WRONG)
    t.ok(run.ms < EXIT_WITHIN_MS, `exits within ${EXIT_WITHIN_MS} ms (took ${run.ms} ms)`)
  },
)
