// Helpers for the scale-out tests (issue 11): demo instances as separate processes on one PostgreSQL
// schema and one Redis prefix, a private redis-server, and a cuttable TCP proxy in front of PostgreSQL.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { type EventEmitter, once } from 'node:events'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const ADMIN = { username: 'admin', password: 'Adm1n!Passw0rd' }
export const PASSWORD = 'Str0ng!Passw0rd'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))
const CLUSTER = fileURLToPath(new URL('../dist/cluster.js', import.meta.url))

/** The same secrets for every instance of a test (tokens signed on A verify on B). */
export const SECRETS = {
  SIGNING_SECRET: 'scale-test-signing-secret-0123456789abcdef0123456789abcdef',
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  HASH_SALT: 'scale-test-hash-salt-0123456789abcdef',
}

/** The part of a `ws` client the tests use. */
export interface WsClient extends EventEmitter {
  send(data: Uint8Array): void
  close(code?: number, reason?: string): void
  terminate(): void
}

/** `ws` is a dependency of @trivium/websocket; resolved from there (Node 20 has no global WebSocket). */
export const WebSocket = createRequire(createRequire(import.meta.url).resolve('@trivium/websocket'))(
  'ws',
) as new (
  url: string,
) => WsClient

export interface Backend {
  schema: string
  prefix: string
  databaseUrl: string
  redisUrl: string
}

/** A fresh schema name and Redis prefix (dropped by {@link dropBackend}). */
export function newBackend(overrides: Partial<Backend> = {}): Backend {
  const id = randomBytes(6).toString('hex')
  return {
    schema: `test_scale_${id}`,
    prefix: `test:scale:${id}:`,
    databaseUrl: POSTGRES_URL,
    redisUrl: REDIS_URL,
    ...overrides,
  }
}

/** Drops the schema (on the real server) and the keys under the prefix (on the given Redis). */
export async function dropBackend(backend: Backend, redisUrl = backend.redisUrl): Promise<void> {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  await client.query(`DROP SCHEMA IF EXISTS "${backend.schema}" CASCADE`)
  await client.end()
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  try {
    await redis.connect()
    const keys = await redis.keys(`${backend.prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
  } catch {
    // a private redis-server that is already gone holds nothing to delete
  } finally {
    redis.disconnect()
  }
}

export interface Instance {
  name: string
  http: number
  tcp: number | null
  base: string
  proc: ChildProcess
  /** stdout + stderr so far (LOG_LEVEL=warn: warnings and errors, as JSON lines). */
  output(): string
  stop(): Promise<void>
}

export function backendEnv(backend: Backend): Record<string, string> {
  return {
    DATABASE_URL: backend.databaseUrl,
    DATABASE_SCHEMA: backend.schema,
    REDIS_URL: backend.redisUrl,
    REDIS_PREFIX: backend.prefix,
  }
}

function baseEnv(name: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v
  // Nothing from the caller's environment that changes the demo's behaviour.
  for (const k of ['NODE_ENV', 'HOST', 'TCP_MODE', 'ADMIN_USERNAME', 'ADMIN_EMAIL', 'WORKERS']) delete env[k]
  return {
    ...env,
    ...SECRETS,
    PORT: '0',
    TCP_PORT: '0',
    TRIVIUM_PRINT_PORTS: '1',
    LOG_LEVEL: 'warn',
    COMPRESSION: 'off', // CPU the suite does not need; compression-default.test.ts covers the default
    ADMIN_PASSWORD: ADMIN.password,
    TRUST_PROXY: 'true', // lets the tests spread logins over client addresses (X-Forwarded-For)
    INSTANCE_NAME: name,
  }
}

/**
 * How long an instance may take to print its ports. No test promises a start-up time: this is only a
 * limit for a process that hangs. A demo start is ~2 s on an idle machine, but 22 s (PostgreSQL) and
 * 44 s (a fresh PGlite data directory) were measured at load 21 on the shared 2-core machine, and start
 * limits of 30 and 90 s were exceeded at load 20–28 (issue 31: the suite passes at load 15).
 */
export const START_LIMIT_MS = 240_000

/** Starts `node dist/server.js` (or dist/cluster.js) and waits for its `TRIVIUM_PORTS` line. */
export async function startProcess(
  name: string,
  env: Record<string, string>,
  opts: { script?: 'server' | 'cluster'; timeoutMs?: number } = {},
): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), 'trivium-scale-'))
  const proc = spawn(process.execPath, [opts.script === 'cluster' ? CLUSTER : SERVER], {
    env: { ...baseEnv(name), DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout!.on('data', (chunk) => {
    out += chunk
  })
  proc.stderr!.on('data', (chunk) => {
    out += chunk
  })
  const exited = once(proc, 'exit')
  const ports = await new Promise<{ http: number; tcp: number | null }>((resolve, reject) => {
    const limit = opts.timeoutMs ?? START_LIMIT_MS
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${limit} ms:\n${out}`)),
      limit,
    )
    const onData = () => {
      const m = /TRIVIUM_PORTS (\{.*\})/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(JSON.parse(m[1]!))
      }
    }
    proc.stdout!.on('data', onData)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${name} exited with ${code} before listening:\n${out}`))
    })
  }).catch(async (err) => {
    // The process may still be writing its data directory: remove it once the process is gone, so
    // that the start's error is the one reported.
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL')
      await exited
    }
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 })
    throw err
  })
  let stopped: Promise<void> | undefined
  return {
    name,
    ...ports,
    base: `http://127.0.0.1:${ports.http}`,
    proc,
    output: () => out,
    stop() {
      stopped ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) {
          proc.kill('SIGTERM')
          const force = setTimeout(() => proc.kill('SIGKILL'), 8000)
          await exited
          clearTimeout(force)
        }
        rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 })
      })()
      return stopped
    },
  }
}

/**
 * One instance on a fresh PostgreSQL schema and Redis prefix, stopped and dropped at the test's end: for
 * tests of something else than storage (logs, traces), which a fresh PGlite data directory only makes
 * slower to start (44 against 22 s at load 21, its WebAssembly initdb on the shared cores).
 */
export async function startOnPostgres(
  t: Test,
  name: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  const backend = newBackend()
  let instance: Instance | undefined
  t.teardown(async () => {
    await instance?.stop()
    await dropBackend(backend)
  })
  instance = await startProcess(name, { ...backendEnv(backend), ...env })
  return instance
}

/**
 * Starts `count` instances on one backend at the same moment; the test's teardown stops them and drops
 * the backend (schema + prefix), unless `keepBackend`.
 */
export async function startInstances(
  t: Test,
  backend: Backend,
  count = 2,
  env: Record<string, string> = {},
): Promise<Instance[]> {
  const started: Instance[] = []
  t.teardown(async () => {
    await Promise.all(started.map((i) => i.stop()))
    await dropBackend(backend)
  })
  const names = ['A', 'B', 'C', 'D'].slice(0, count)
  const results = await Promise.allSettled(
    names.map((n) => startProcess(n, { ...backendEnv(backend), ...env })),
  )
  for (const r of results) if (r.status === 'fulfilled') started.push(r.value)
  const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined
  if (failed) throw failed.reason
  return started
}

export interface Reply {
  status: number
  headers: Headers
  body: any
}

let clientAddress = 0
/** A distinct client address (X-Forwarded-For) so the 5/min limits of register/login do not interfere. */
export function nextClientIp(): string {
  clientAddress++
  return `10.${(clientAddress >> 16) & 255}.${(clientAddress >> 8) & 255}.${clientAddress & 255}`
}

export async function api(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.token) headers.authorization = `Bearer ${opts.token}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(base + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body }
}

export async function login(base: string, username: string, password = PASSWORD) {
  const res = await api(base, 'POST', '/auth/login', {
    body: { username, password },
    headers: { 'x-forwarded-for': nextClientIp() },
  })
  if (res.status !== 200)
    throw new Error(`login ${username} failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { accessToken: string; refreshToken: string; expiresIn: number }
}

export async function register(base: string, username: string, password = PASSWORD) {
  const res = await api(base, 'POST', '/auth/register', {
    body: { username, email: `${username}@example.com`, password },
    headers: { 'x-forwarded-for': nextClientIp() },
  })
  if (res.status !== 201)
    throw new Error(`register ${username} failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { id: number; username: string; roles: string[] }
}

export async function registerAndLogin(base: string, username: string) {
  const user = await register(base, username)
  return { user, tokens: await login(base, username) }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (then returns the last value). */
export async function until<T>(fn: () => Promise<T>, timeoutMs: number, everyMs = 20): Promise<T> {
  const end = Date.now() + waitBound(timeoutMs)
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() >= end) {
      // Said on stderr: a wait that ran out is a failure (asserted by the caller) or a test that waits in vain.
      const at = new Error().stack?.split('\n')[2]?.trim()
      process.stderr.write(`until: no result within ${waitBound(timeoutMs)} ms (${at})\n`)
      return value
    }
    await sleep(everyMs)
  }
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN
}

export async function freePort(): Promise<number> {
  const server = net.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/**
 * A private `redis-server` that a test can stop and start again on the same port. No periodic saves and
 * no AOF; `stop({ save: true })` is `SHUTDOWN SAVE` (the data comes back on `start()`, as with a Redis
 * restarted by its operator), `stop()` kills it (an outage that loses nothing on disk either way).
 */
export class PrivateRedis {
  proc: ChildProcess | undefined
  readonly dir = mkdtempSync(join(tmpdir(), 'trivium-scale-redis-'))
  /**
   * `args`: more redis-server options, e.g. `['--requirepass', 'secret']`; `sentinelConfig`: a Redis
   * Sentinel (`redis-server <file> --sentinel`) with that configuration file.
   */
  constructor(
    readonly port: number,
    readonly args: string[] = [],
    readonly sentinelConfig?: string,
  ) {}

  static async create(args: string[] = []): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), args)
    await redis.start()
    return redis
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`
  }

  async start(): Promise<void> {
    const sentinel = this.sentinelConfig !== undefined
    const mode = sentinel ? [this.sentinelConfig!, '--sentinel'] : []
    const persistence = sentinel ? [] : ['--save', '', '--appendonly', 'no']
    const proc = spawn(
      'redis-server',
      [
        ...mode,
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        ...persistence,
        '--dir',
        this.dir,
        ...this.args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    this.proc = proc
    let out = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 10000)
      proc.stdout!.on('data', (chunk) => {
        out += chunk
        if (out.includes(sentinel ? '+monitor master' : 'Ready to accept connections')) {
          clearTimeout(timer)
          resolve()
        }
      })
      proc.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`redis-server exited with ${code}:\n${out}`))
      })
    })
  }

  async stop(opts: { save?: boolean } = {}): Promise<void> {
    const proc = this.proc
    this.proc = undefined
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = once(proc, 'exit')
    if (opts.save) {
      spawn('redis-cli', ['-p', String(this.port), 'shutdown', 'save'], { stdio: 'ignore' })
    } else {
      proc.kill('SIGKILL')
    }
    await exited
  }

  async close(): Promise<void> {
    await this.stop()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * A TCP proxy in front of PostgreSQL (or any server: Redis): `cut()` drops every connection and refuses new
 * ones; `hold()` keeps the bytes both ways with the connections open (a partition without a reset),
 * `release()` delivers them.
 */
export class PgProxy {
  private readonly sockets = new Set<net.Socket>()
  private cutOff = false
  private held: [net.Socket, Buffer][] | undefined
  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async create(target = new URL(POSTGRES_URL)): Promise<PgProxy> {
    let proxy!: PgProxy
    const server = net.createServer((client) => {
      if (proxy.cutOff) {
        client.destroy()
        return
      }
      const upstream = net.connect(Number(target.port || 5432), target.hostname)
      for (const s of [client, upstream]) {
        proxy.sockets.add(s)
        s.on('error', () => {})
        s.on('close', () => {
          proxy.sockets.delete(s)
          client.destroy()
          upstream.destroy()
        })
      }
      const forward = (to: net.Socket) => (data: Buffer) => {
        if (proxy.held) proxy.held.push([to, data])
        else to.write(data)
      }
      client.on('data', forward(upstream))
      upstream.on('data', forward(client))
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    proxy = new PgProxy(server, (server.address() as net.AddressInfo).port)
    return proxy
  }

  get url(): string {
    const u = new URL(POSTGRES_URL)
    u.hostname = '127.0.0.1'
    u.port = String(this.port)
    return u.toString()
  }

  cut(): void {
    this.cutOff = true
    this.held = undefined
    for (const s of this.sockets) s.destroy()
  }

  restore(): void {
    this.cutOff = false
  }

  hold(): void {
    this.held ??= []
  }

  release(): void {
    const held = this.held ?? []
    this.held = undefined
    for (const [to, data] of held) if (!to.destroyed) to.write(data)
  }

  async close(): Promise<void> {
    this.cut()
    await new Promise<void>((r) => this.server.close(() => r()))
  }
}

/**
 * Reads a Server-Sent Events response (HTTP streaming endpoint) into parsed events. Returns at once:
 * the response headers only arrive with the first event (Node sends them with the first body write).
 */
export function openSse(base: string, path: string, token: string) {
  const controller = new AbortController()
  const response = fetch(base + path, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: controller.signal,
  })
  response.catch(() => {})
  const events: { event: string; id?: string; data: any }[] = []
  let ended = false
  const done = (async () => {
    const res = await response
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end = buffer.indexOf('\n\n')
        while (end >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const ev: { event: string; id?: string; data: any } = { event: 'message', data: '' }
          for (const line of block.split('\n')) {
            const i = line.indexOf(':')
            if (i <= 0) continue
            const field = line.slice(0, i)
            const value = line.slice(i + 1).replace(/^ /, '')
            if (field === 'event') ev.event = value
            else if (field === 'id') ev.id = value
            else if (field === 'data') ev.data = ev.data ? `${ev.data}\n${value}` : value
          }
          try {
            ev.data = JSON.parse(ev.data)
          } catch {}
          events.push(ev)
          end = buffer.indexOf('\n\n')
        }
      }
      ended = true
    } catch {
      // aborted
    }
  })()
  return {
    response,
    events,
    /** The server ended the response (not the client's close). */
    get ended() {
      return ended
    },
    async close() {
      controller.abort()
      await done
    },
  }
}

/** Redis keys under a prefix with their TTL (ms; -1 = no expiry). */
export async function keysWithTtl(redisUrl: string, prefix: string): Promise<Map<string, number>> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(redisUrl)
  try {
    const keys = await redis.keys(`${prefix}*`)
    const out = new Map<string, number>()
    for (const k of keys) out.set(k, await redis.pttl(k))
    return out
  } finally {
    redis.disconnect()
  }
}

/** The PostgreSQL server binaries (initdb, postgres), newest installed version; undefined when absent. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin')
}

/**
 * A private PostgreSQL server (initdb in a temporary folder) whose TCP connections need the password
 * (scram-sha-256), unlike the machine's trust-auth server. PostgreSQL refuses to run as root: as root it
 * runs as the `postgres` user.
 */
export class PrivatePostgres {
  private proc: ChildProcess | undefined
  private constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
    private readonly user: { uid: number; gid: number } | undefined,
    private readonly settings: string[] = [],
  ) {}

  /**
   * `opts.port`: the port (default a free one); `opts.files`: files copied into its folder, owned by the
   * server's user, mode 0600 (a TLS key and certificate); `opts.settings`: `-c` settings, where
   * `{dir}` stands for that folder (e.g. `ssl_key_file={dir}/server.key`).
   */
  static async create(
    password: string,
    opts: { port?: number; files?: Record<string, string>; settings?: string[] } = {},
  ): Promise<PrivatePostgres> {
    const bin = postgresBinDir()
    if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql')
    const dir = mkdtempSync(join(tmpdir(), 'trivium-private-pg-'))
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
    const user = process.getuid?.() === 0 ? { uid: id('-u'), gid: id('-g') } : undefined
    writeFileSync(join(dir, 'pw'), password)
    if (user) for (const p of [dir, join(dir, 'pw')]) chownSync(p, user.uid, user.gid)
    for (const [name, from] of Object.entries(opts.files ?? {})) {
      copyFileSync(from, join(dir, name))
      chmodSync(join(dir, name), 0o600)
      if (user) chownSync(join(dir, name), user.uid, user.gid)
    }
    const settings = (opts.settings ?? []).flatMap((s) => ['-c', s.replaceAll('{dir}', dir)])
    const pg = new PrivatePostgres(bin, dir, opts.port ?? (await freePort()), user, settings)
    execFileSync(
      join(bin, 'initdb'),
      [
        ...['-D', join(dir, 'data'), '-U', 'postgres', `--pwfile=${join(dir, 'pw')}`],
        ...['--auth-host=scram-sha-256', '--auth-local=trust', '--no-sync'],
      ],
      { ...user, stdio: 'ignore', env: { ...process.env, LC_ALL: 'C' } },
    )
    await pg.start()
    return pg
  }

  url(password: string, database = 'postgres'): string {
    return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${this.port}/${database}`
  }

  async start(): Promise<void> {
    const proc = spawn(
      join(this.bin, 'postgres'),
      [
        '-D',
        join(this.dir, 'data'),
        '-p',
        String(this.port),
        '-k',
        this.dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        ...this.settings,
      ],
      { ...this.user, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    this.proc = proc
    let out = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`postgres did not start:\n${out}`)), 60_000)
      proc.stderr!.on('data', (chunk) => {
        out += chunk
        if (out.includes('ready to accept connections')) {
          clearTimeout(timer)
          resolve()
        }
      })
      proc.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`postgres exited with ${code}:\n${out}`))
      })
    })
  }

  async close(): Promise<void> {
    const proc = this.proc
    this.proc = undefined
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      const exited = once(proc, 'exit')
      proc.kill('SIGQUIT') // immediate shutdown: nothing here is worth a checkpoint
      await exited
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}
