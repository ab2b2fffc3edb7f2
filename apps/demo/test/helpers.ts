import { createHash, randomBytes } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { connectPglite } from '@trivium/sql'
import type { Test } from 'tap'
import { buildApp } from '../dist/app.js'
import { type DemoConfig, loadConfig } from '../dist/config.js'
import './bcrypt-memo.js'

export const ADMIN = { username: 'admin', password: 'Adm1n!Passw0rd' }

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export type Backend = 'embedded' | 'postgres+redis'
/**
 * The backends the running test file covers. A suite file runs on both, unless it has a sibling
 * `<name>.postgres.test.ts` (which only imports it): then `<name>.test.ts` runs on the embedded backend
 * and the sibling on PostgreSQL + Redis, each in its own process under the runner's per-file time limit
 * (both in one file took over 300 s at load 23–26 on the shared 2-core machine: bcrypt logins, two demo
 * starts).
 */
export const BACKENDS: Backend[] = backendsOfEntry(process.argv[1] ?? '')

function backendsOfEntry(entry: string): Backend[] {
  if (entry.endsWith('.postgres.test.ts')) return ['postgres+redis']
  if (entry.endsWith('.test.ts') && existsSync(entry.replace(/\.test\.ts$/, '.postgres.test.ts')))
    return ['embedded']
  return ['embedded', 'postgres+redis']
}

/** Config for a backend: PGlite + memory, or PostgreSQL (own schema) + Redis (own prefix). */
export function backendConfig(backend: Backend): Partial<DemoConfig> & { cleanup?: () => Promise<void> } {
  if (backend === 'embedded') return {}
  const id = randomBytes(6).toString('hex')
  return {
    databaseUrl: POSTGRES_URL,
    databaseSchema: `test_demo_${id}`,
    redisUrl: REDIS_URL,
    redisPrefix: `test:demo:${id}:`,
  }
}

/** Drops a test schema and a test key prefix. */
export async function dropBackend(config: Partial<DemoConfig>): Promise<void> {
  if (config.databaseSchema) {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS "${config.databaseSchema}" CASCADE`)
    await client.end()
  }
  if (config.redisPrefix && config.redisUrl) {
    const { Redis } = await import('ioredis')
    const redis = new Redis(REDIS_URL)
    const keys = await redis.keys(`${config.redisPrefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  }
}

/**
 * What an initdb made by this checkout depends on, hashed: the PGlite that @trivium/sql loads (where its
 * entry is, which names the version in pnpm's layout, and the entry itself) and @trivium/sql's PGlite
 * start-up code (its start parameters).
 */
function templateKey(): string {
  const sqlEntry = createRequire(import.meta.url).resolve('@trivium/sql')
  const pgliteEntry = createRequire(sqlEntry).resolve('@electric-sql/pglite')
  return createHash('sha256')
    .update(pgliteEntry)
    .update(readFileSync(pgliteEntry))
    .update(readFileSync(join(dirname(sqlEntry), 'pglite.js')))
    .digest('hex')
    .slice(0, 16)
}
const INITDB_TEMPLATE = join(tmpdir(), `trivium-test-initdb-${templateKey()}`)
let template: Promise<string> | undefined

/**
 * An empty PGlite cluster (initdb only: no schema, no rows), made once per machine and `templateKey()`.
 * initdb is most of a demo's start-up (~3 s of ~4 s); a copy of its result is what the demo would create
 * in a new data folder, and the demo then migrates and seeds it as on a first start.
 */
function initdbTemplate(): Promise<string> {
  template ??= (async () => {
    if (existsSync(join(INITDB_TEMPLATE, 'PG_VERSION'))) return INITDB_TEMPLATE
    // Made aside and renamed into place: test files running at once never see half a template.
    const aside = mkdtempSync(join(dirname(INITDB_TEMPLATE), 'trivium-test-initdb-making-'))
    const db = await connectPglite({ dataDir: aside, initdbInChildProcess: true })
    await db.close()
    try {
      renameSync(aside, INITDB_TEMPLATE)
    } catch {
      rmSync(aside, { recursive: true, force: true }) // another file made it first
    }
    return INITDB_TEMPLATE
  })()
  return template
}

/** An initialised, empty PGlite data folder at `dir` (a copy of {@link initdbTemplate}'s). */
export async function copyInitdb(dir: string): Promise<void> {
  cpSync(await initdbTemplate(), dir, { recursive: true })
}

/** A demo app on a fresh data folder (PGlite), TCP on a random port, no logs (or into `logStream`). */
export async function startDemo(
  t: Test,
  overrides: Partial<DemoConfig> = {},
  logStream?: NodeJS.WritableStream,
) {
  const dataDir = mkdtempSync(join(tmpdir(), 'trivium-demo-'))
  if (overrides.databaseUrl === undefined) await copyInitdb(join(dataDir, 'pglite'))
  const config: DemoConfig = {
    ...loadConfig({}),
    dataDir,
    port: 0,
    tcpPort: 0,
    logLevel: 'silent',
    adminPassword: ADMIN.password,
    // The demo compresses by default (COMPRESSION); the tests that are not about it run without, since it
    // costs the suite measurable CPU (auth-sessions: 14 → 25 s). compression-default.test.ts asks for it.
    compression: false,
    ...overrides,
  }
  const demo = await buildApp(config, logStream)
  t.teardown(async () => {
    await demo.app.close()
    rmSync(dataDir, { recursive: true, force: true })
    await dropBackend(config)
  })
  return { ...demo, config }
}

/** `remoteAddress`: the client's address (register and login allow 5 calls a minute per address). */
export async function registerAndLogin(
  app: Awaited<ReturnType<typeof startDemo>>['app'],
  username: string,
  password = 'Str0ng!Passw0rd',
  remoteAddress?: string,
) {
  const reg = await app.inject({
    method: 'POST',
    url: '/auth/register',
    payload: { username, email: `${username}@example.com`, password },
    remoteAddress,
  })
  if (reg.statusCode !== 201) throw new Error(`register failed: ${reg.body}`)
  const login = await app.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { username, password },
    remoteAddress,
  })
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
  return {
    user: reg.json(),
    tokens: login.json() as { accessToken: string; refreshToken: string; expiresIn: number },
  }
}
