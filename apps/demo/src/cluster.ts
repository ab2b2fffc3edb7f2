// `pnpm --filter @trivium/demo start:cluster`: N copies of the demo (server.ts) as node:cluster workers
// sharing one HTTP port (and WebSocket) and one TCP port; the primary only supervises.
//
// The workers are separate processes: everything they share lives in PostgreSQL and Redis, so both are
// required (PGlite is one process; in-memory revocation, rate limits and push would differ per worker).
//   WORKERS          number of workers (default: os.availableParallelism())
//   INSTANCE_NAME    prefix of each worker's name in logs and /health (default `demo`): `<name>-w<id>`
// Everything else is the demo's usual environment (README "Configuration of the demo").
import cluster, { type Worker } from 'node:cluster'
import net from 'node:net'
import { availableParallelism } from 'node:os'
import { loadConfig } from './config.js'
import { openDatabase } from './database.js'
import { READY_PATH } from './readiness.js'
import { resolveRedis } from './redis-topology.js'
import { loadSecrets } from './secrets.js'

if (cluster.isPrimary) {
  await runPrimary()
} else {
  await import('./server.js')
}

function fail(message: string): never {
  console.error(`Trivium Tasks cluster: ${message}`)
  process.exit(1)
}

/** A free port chosen by the primary (workers listening on port 0 would share one random port for HTTP and TCP). */
async function freePort(host: string): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, resolve)
  })
  const { port } = server.address() as net.AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function runPrimary(): Promise<void> {
  const env = process.env
  // Any Redis topology will do (REDIS_SENTINELS or REDIS_CLUSTER_NODES instead of REDIS_URL).
  const redisGiven = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].some((name) => env[name])
  const missing = ['DATABASE_URL', ...(redisGiven ? [] : ['REDIS_URL'])].filter((name) => !env[name])
  if (missing.length > 0) {
    fail(
      `refusing to start without ${missing.join(' and ')}: workers are separate processes and share ` +
        'their state only through PostgreSQL (DATABASE_URL) and Redis (REDIS_URL); the embedded PGlite ' +
        'database and the in-memory stores are for a single process (use `pnpm start`).',
    )
  }
  const rawWorkers = env.WORKERS ?? String(availableParallelism())
  const workers = Number(rawWorkers)
  if (!Number.isInteger(workers) || workers < 1 || workers > 256)
    fail(`WORKERS must be an integer from 1 to 256, got ${rawWorkers}`)

  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig()
  } catch (err) {
    fail((err as Error).message)
  }
  // Every worker must sign and encrypt with the same secrets: resolve them once, here (in development
  // they are generated into DATA_DIR once; in production they must be set, as for `pnpm start`).
  let secrets: ReturnType<typeof loadSecrets>
  try {
    secrets = loadSecrets(config, (message) => console.warn(`Trivium Tasks cluster: ${message}`))
  } catch (err) {
    fail((err as Error).message)
  }
  // A bad DATABASE_URL or Redis setting is refused here in one line, before any worker starts.
  try {
    await (await openDatabase(config)).close()
    await resolveRedis(config.redisUrl, config.redisSettings)?.check()
  } catch (err) {
    fail((err as Error).message)
  }
  // Port 0 means "any free port": pick them here so every worker shares the same two ports.
  const port = config.port === 0 ? await freePort(config.host) : config.port
  const tcpPort = config.tcpPort === 0 ? await freePort(config.host) : config.tcpPort
  const name = env.INSTANCE_NAME || 'demo'
  const workerEnv = (id: number): Record<string, string> => ({
    PORT: String(port),
    TCP_PORT: String(tcpPort),
    INSTANCE_NAME: `${name}-w${id}`,
    SIGNING_SECRET: secrets.signingSecret,
    ENCRYPTION_KEY: secrets.encryptionKey,
    HASH_SALT: secrets.hashSalt,
  })

  let stopping = false
  let slot = 0
  const started = Date.now()
  const fork = (id: number): Worker => {
    const worker = cluster.fork(workerEnv(id))
    worker.on('exit', (code, signal) => {
      if (stopping) return
      // A worker that dies is replaced (same name), unless the cluster cannot even start.
      if (Date.now() - started < 10_000) {
        console.error(
          `Trivium Tasks cluster: worker ${id} exited during start-up (${signal ?? code}); stopping`,
        )
        void shutdown(1)
        return
      }
      console.error(`Trivium Tasks cluster: worker ${id} exited (${signal ?? code}); starting a new one`)
      setTimeout(() => fork(id), 1000).unref()
    })
    return worker
  }
  for (let i = 0; i < workers; i++) fork(++slot)

  let listening = 0
  cluster.on('listening', () => {
    if (++listening === workers * (tcpPort >= 0 ? 2 : 1)) void announceReady()
  })

  // Listening is not ready: the line is printed once GET /health/ready answers 200 (PostgreSQL and Redis
  // reachable), so scripts can wait for it.
  async function announceReady(): Promise<void> {
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}${READY_PATH}`
    let last = ''
    for (let i = 0; i < 60 && !stopping; i++) {
      try {
        const res = await fetch(url)
        if (res.ok) {
          console.error(
            `Trivium Tasks cluster: ${workers} workers ready on http://${config.host}:${port}` +
              (tcpPort >= 0 ? ` and tcp://${config.host}:${tcpPort}` : ''),
          )
          return
        }
        last = ((await res.json()) as { message?: string }).message ?? `status ${res.status}`
      } catch (err) {
        last = (err as Error).message
      }
      await new Promise((r) => setTimeout(r, 500))
    }
    if (!stopping)
      console.error(`Trivium Tasks cluster: workers listen but are not ready after 30 s (${last})`)
  }

  async function shutdown(code: number): Promise<void> {
    if (stopping) return
    stopping = true
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined)
    // Each worker drains its own connections and streams on SIGTERM (server.ts), then exits.
    await Promise.all(
      alive.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve()
            w.once('exit', () => resolve())
            w.process.kill('SIGTERM')
          }),
      ),
    )
    process.exit(code)
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void shutdown(0))
}
