// Helpers for the topology tests (issue 32): a Sentinel set (primary, replica, three sentinels) and TLS
// certificates made at test time, all on loopback ports of this file's own range (17300-17399), in
// mkdtemp folders removed by close().
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import { PrivateRedis, SECRETS, until } from './scale-helpers.js'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))

const RANGE = { first: 17300, last: 17399 }
const taken = new Set<number>()

async function isFree(port: number): Promise<boolean> {
  const server = net.createServer()
  return new Promise((resolve) => {
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** A free port of the range (from a random start: test files running at once rarely collide). */
export async function rangePort(): Promise<number> {
  const size = RANGE.last - RANGE.first + 1
  const start = Math.floor(Math.random() * size)
  for (let i = 0; i < size; i++) {
    const port = RANGE.first + ((start + i) % size)
    if (taken.has(port)) continue
    if (await isFree(port)) {
      taken.add(port)
      return port
    }
  }
  throw new Error(`no free port in ${RANGE.first}-${RANGE.last}`)
}

export interface SentinelSetOptions {
  /** requirepass of the data nodes (and masterauth, auth-pass). */
  password?: string
  /** requirepass of the sentinels. */
  sentinelPassword?: string
  name?: string
  downAfterMs?: number
  /** TLS only, on every node and sentinel (and between them), with these certificates. */
  tls?: Certificates
}

/**
 * A primary, a replica and three sentinels (quorum 2) on loopback. `kill()` of the primary is the fault;
 * the sentinels promote the replica after `downAfterMs`.
 */
export class SentinelSet {
  readonly name: string
  private constructor(
    readonly primary: PrivateRedis,
    readonly replica: PrivateRedis,
    readonly sentinels: PrivateRedis[],
    readonly options: SentinelSetOptions,
    private readonly dir: string,
  ) {
    this.name = options.name ?? 'mymaster'
  }

  static async create(options: SentinelSetOptions = {}): Promise<SentinelSet> {
    const tls = (port: number) =>
      options.tls
        ? [
            ...['--port', '0', '--tls-port', String(port), '--tls-replication', 'yes'],
            ...['--tls-cert-file', options.tls.serverCert, '--tls-key-file', options.tls.serverKey],
            ...['--tls-ca-cert-file', options.tls.ca, '--tls-auth-clients', 'no'],
          ]
        : []
    const auth = options.password ? ['--requirepass', options.password, '--masterauth', options.password] : []
    const dir = mkdtempSync(join(tmpdir(), 'trivium-sentinel-'))
    const started: PrivateRedis[] = []
    try {
      const primaryPort = await rangePort()
      const primary = new PrivateRedis(primaryPort, [...auth, ...tls(primaryPort)])
      await primary.start()
      started.push(primary)
      const replicaPort = await rangePort()
      const replica = new PrivateRedis(replicaPort, [
        ...auth,
        ...tls(replicaPort),
        '--replicaof',
        '127.0.0.1',
        String(primary.port),
      ])
      await replica.start()
      started.push(replica)
      const name = options.name ?? 'mymaster'
      const sentinels: PrivateRedis[] = []
      for (let i = 0; i < 3; i++) {
        const port = await rangePort()
        // A sentinel rewrites its configuration file: each has its own.
        const file = join(dir, `sentinel-${i}.conf`)
        writeFileSync(
          file,
          [
            `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
            `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
            `sentinel failover-timeout ${name} 5000`,
            `sentinel parallel-syncs ${name} 1`,
            ...(options.password ? [`sentinel auth-pass ${name} ${options.password}`] : []),
            ...(options.sentinelPassword ? [`requirepass ${options.sentinelPassword}`] : []),
            '',
          ].join('\n'),
        )
        const sentinel = new PrivateRedis(port, tls(port), file)
        await sentinel.start()
        started.push(sentinel)
        sentinels.push(sentinel)
      }
      const set = new SentinelSet(primary, replica, sentinels, options, dir)
      await set.settled()
      return set
    } catch (err) {
      await Promise.all(started.map((r) => r.close()))
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
  }

  /** `REDIS_SENTINELS` for the demo. */
  get setting(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')
  }

  sentinelClient(sentinel: PrivateRedis): Redis {
    const certs = this.options.tls
    const client = new Redis(sentinel.port, '127.0.0.1', {
      password: this.options.sentinelPassword,
      ...(certs ? { tls: { ca: pem(certs.ca) } } : {}),
      maxRetriesPerRequest: 1,
      lazyConnect: true,
    })
    client.on('error', () => {})
    return client
  }

  /** Asks every sentinel; true when `check` holds for each answer. */
  async everySentinel(check: (client: Redis) => Promise<boolean>): Promise<boolean> {
    const results = await Promise.all(
      this.sentinels.map(async (s) => {
        const client = this.sentinelClient(s)
        try {
          await client.connect()
          return await check(client)
        } catch {
          return false
        } finally {
          client.disconnect()
        }
      }),
    )
    return results.every(Boolean)
  }

  /** The primary every sentinel names (host:port), or undefined while they disagree. */
  async primaryPort(): Promise<number | undefined> {
    const ports = new Set<number>()
    const ok = await this.everySentinel(async (c) => {
      const reply = (await c.call('SENTINEL', 'get-master-addr-by-name', this.name)) as [string, string]
      ports.add(Number(reply[1]))
      return true
    })
    return ok && ports.size === 1 ? [...ports][0] : undefined
  }

  /** Until the sentinels know the replica (linked to the primary) and each other: a failover can happen. */
  private async settled(): Promise<void> {
    const ready = await until(
      () =>
        this.everySentinel(async (c) => {
          const replicas = (await c.call('SENTINEL', 'replicas', this.name)) as string[][]
          const others = (await c.call('SENTINEL', 'sentinels', this.name)) as string[][]
          const flags = (r: string[]) => r[r.indexOf('flags') + 1] ?? ''
          const link = (r: string[]) => r[r.indexOf('master-link-status') + 1]
          return (
            replicas.length === 1 &&
            flags(replicas[0]!) === 'slave' &&
            link(replicas[0]!) === 'ok' &&
            others.length === 2
          )
        }),
      60_000,
      200,
    )
    if (!ready) throw new Error('the sentinels did not discover the replica and each other within 60 s')
  }

  async close(): Promise<void> {
    await Promise.all([this.primary, this.replica, ...this.sentinels].map((r) => r.close()))
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export interface Certificates {
  dir: string
  ca: string
  /** A CA that signed nothing here: the wrong CA. */
  otherCa: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
}

/** A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, made with openssl. */
export function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-tls-'))
  const f = (name: string) => join(dir, name)
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' })
  for (const ca of ['ca', 'other-ca'])
    ssl(
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2'],
      ...['-keyout', f(`${ca}.key`), '-out', f(`${ca}.crt`), '-subj', `/CN=Trivium test ${ca}`],
    )
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  for (const [name, cn, ext] of [
    ['server', '127.0.0.1', ['-extfile', f('server.ext')]],
    ['client', 'trivium-client', []],
  ] as const) {
    ssl(
      ...['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f(`${name}.key`)],
      ...['-out', f(`${name}.csr`), '-subj', `/CN=${cn}`],
    )
    ssl(
      ...['x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key')],
      ...['-CAcreateserial', '-days', '2', '-out', f(`${name}.crt`), ...ext],
    )
  }
  return {
    dir,
    ca: f('ca.crt'),
    otherCa: f('other-ca.crt'),
    serverCert: f('server.crt'),
    serverKey: f('server.key'),
    clientCert: f('client.crt'),
    clientKey: f('client.key'),
  }
}

export function pem(path: string): Buffer {
  return readFileSync(path)
}

/** Starts the built server to see it refuse: its exit code and output (a server that started is killed). */
export async function startFailing(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'trivium-tls-settings-'))
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('REDIS_')) base[k] = v
  for (const k of ['DATABASE_URL', 'DATABASE_SCHEMA', 'DATABASE_CA_FILE', 'NODE_ENV', 'HOST']) delete base[k]
  const proc: ChildProcess = spawn(process.execPath, [SERVER], {
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
  const kill = setTimeout(() => proc.kill('SIGKILL'), 120_000)
  const [code] = (await once(proc, 'exit')) as [number | null]
  clearTimeout(kill)
  rmSync(dataDir, { recursive: true, force: true })
  return { code, output }
}
