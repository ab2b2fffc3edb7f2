// What the fault suite starts, each stoppable, freezable or restartable, and all of it stopped by
// `stopAll()`: a private redis-server, a private PostgreSQL (initdb in a temporary folder; as root it runs
// as the `postgres` user, which PostgreSQL requires), a TCP proxy that can hold bytes (a partition that
// does not reset connections), and demo instances (apps/demo/dist/server.js). Loopback only.
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const DEMO_SERVER = new URL('../../apps/demo/dist/server.js', import.meta.url).pathname
const cleanups = new Set()
const dirs = new Set()

/** Stops everything started here (SIGKILL where a clean stop is not needed) and removes its folders. */
export async function stopAll() {
  for (const cleanup of [...cleanups].reverse()) {
    try {
      await cleanup()
    } catch {}
  }
  cleanups.clear()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
}

function tempDir(name) {
  const dir = mkdtempSync(join(tmpdir(), `trivium-faults-${name}-`))
  dirs.add(dir)
  return dir
}

export async function freePort() {
  const server = net.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  server.close()
  await once(server, 'close')
  return port
}

function alive(proc) {
  return proc !== undefined && proc.exitCode === null && proc.signalCode === null
}

/** Kills `proc` with `signal` and waits for its exit, SIGKILL after `graceMs`. */
async function kill(proc, signal = 'SIGKILL', graceMs = 10_000) {
  if (!alive(proc)) return
  const exited = once(proc, 'exit')
  proc.kill(signal)
  const force = setTimeout(() => proc.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(force)
}

/** Resolves when `text` appears on the process's stdout or stderr; rejects on exit or after `ms`. */
function waitForOutput(proc, text, ms, what) {
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms} ms:\n${out}`)), ms)
    const onData = (chunk) => {
      out += chunk
      if (out.includes(text)) {
        clearTimeout(timer)
        resolve(out)
      }
    }
    proc.stdout?.on('data', onData)
    proc.stderr?.on('data', onData)
    proc.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`${what} exited (${signal ?? code}) before it was ready:\n${out}`))
    })
  })
}

/** A redis-server on its own port, no persistence: a restart comes back empty. */
export class Redis {
  proc
  constructor(port) {
    this.port = port
    this.dir = tempDir('redis')
    cleanups.add(() => kill(this.proc))
  }

  static async start() {
    const redis = new Redis(await freePort())
    await redis.start()
    return redis
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  async start() {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    this.proc = spawn('redis-server', [...args, '--dir', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] })
    await waitForOutput(this.proc, 'Ready to accept connections', 20_000, 'redis-server')
  }

  /** Freezes the process (SIGSTOP): connections stay open, nothing is answered. */
  stall() {
    this.proc.kill('SIGSTOP')
  }

  resume() {
    this.proc.kill('SIGCONT')
  }

  /** SIGKILL: with no persistence, the next start() is empty. */
  async kill() {
    await kill(this.proc)
  }
}

/** The PostgreSQL server binaries (Debian: /usr/lib/postgresql/<version>/bin), or undefined. */
export function postgresBinDir() {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin')
}

/** A private PostgreSQL (trust authentication, loopback, fsync off): it can be restarted safely. */
export class Postgres {
  proc
  constructor(bin, port) {
    this.bin = bin
    this.port = port
    this.dir = tempDir('pg')
    const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
    this.user = process.getuid?.() === 0 ? { uid: id('-u'), gid: id('-g') } : {}
    if (this.user.uid !== undefined) chownSync(this.dir, this.user.uid, this.user.gid)
    cleanups.add(() => kill(this.proc, 'SIGQUIT'))
  }

  static async start(bin) {
    const pg = new Postgres(bin, await freePort())
    execFileSync(
      join(bin, 'initdb'),
      ['-D', join(pg.dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'],
      { ...pg.user, stdio: 'ignore', env: { ...process.env, LC_ALL: 'C' } },
    )
    await pg.start()
    return pg
  }

  get url() {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`
  }

  async start() {
    const args = ['-D', join(this.dir, 'data'), '-p', String(this.port), '-k', this.dir]
    const settings = ['listen_addresses=127.0.0.1', 'fsync=off', 'max_connections=200']
    this.proc = spawn(join(this.bin, 'postgres'), [...args, ...settings.flatMap((s) => ['-c', s])], {
      ...this.user,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    await waitForOutput(this.proc, 'ready to accept connections', 60_000, 'postgres')
  }

  /** Fast shutdown (SIGINT: sessions are ended, as a restart by its operator would). */
  async stop() {
    await kill(this.proc, 'SIGINT', 30_000)
  }
}

/**
 * A TCP proxy (loopback) in front of `targetPort`. `hold()` stops forwarding in both directions while the
 * connections stay open (new ones are accepted and held too): a partition that resets nothing, as a
 * silent network failure; `release()` forwards again.
 */
export class HoldingProxy {
  held = false
  #queues = new Set()
  constructor(server, port) {
    this.server = server
    this.port = port
    cleanups.add(() => this.close())
  }

  static async start(targetPort) {
    let proxy
    const server = net.createServer((client) => {
      const upstream = net.connect(targetPort, '127.0.0.1')
      const sockets = [client, upstream]
      for (const [from, to] of [sockets, [...sockets].reverse()]) {
        const queue = { to, chunks: [] }
        proxy.#queues.add(queue)
        from.on('data', (chunk) => (proxy.held ? queue.chunks.push(chunk) : to.write(chunk)))
        from.on('error', () => {})
        from.on('close', () => {
          proxy.#queues.delete(queue)
          client.destroy()
          upstream.destroy()
        })
      }
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    proxy = new HoldingProxy(server, server.address().port)
    return proxy
  }

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  hold() {
    this.held = true
  }

  /**
   * Ends the hold. `drop`: the held bytes are lost and the connections reset (as when a firewall or NAT
   * forgets them), so what was published meanwhile never arrives; otherwise they are delivered late.
   */
  release({ drop = false } = {}) {
    this.held = false
    for (const queue of this.#queues) {
      const chunks = queue.chunks.splice(0)
      if (drop) queue.to.destroy()
      else for (const chunk of chunks) queue.to.write(chunk)
    }
  }

  async close() {
    this.release()
    for (const queue of this.#queues) queue.to.destroy()
    await new Promise((resolve) => this.server.close(() => resolve()))
  }
}

/** One demo instance (`node apps/demo/dist/server.js`) on random ports. */
export class Instance {
  out = ''
  exit
  constructor(name, env) {
    this.name = name
    this.dataDir = tempDir(`demo-${name}`)
    this.proc = spawn(process.execPath, [DEMO_SERVER], {
      env: {
        ...process.env,
        NODE_ENV: '',
        HOST: '127.0.0.1',
        PORT: '0',
        TCP_PORT: '0',
        TRIVIUM_PRINT_PORTS: '1',
        LOG_LEVEL: 'warn',
        INSTANCE_NAME: name,
        DATA_DIR: this.dataDir,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // The last 200 kB of output, for the report when something goes wrong.
    const keep = (chunk) => {
      this.out = (this.out + chunk).slice(-200_000)
    }
    this.proc.stdout.on('data', keep)
    this.proc.stderr.on('data', keep)
    this.exit = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
    )
    cleanups.add(() => kill(this.proc))
  }

  static async start(name, env) {
    const instance = new Instance(name, env)
    const out = await waitForOutput(instance.proc, 'TRIVIUM_PORTS ', 120_000, `demo ${name}`)
    const ports = JSON.parse(/TRIVIUM_PORTS (\{.*\})/.exec(out)[1])
    instance.http = ports.http
    instance.tcp = ports.tcp
    instance.base = `http://127.0.0.1:${ports.http}`
    return instance
  }

  get running() {
    return alive(this.proc)
  }

  /** @trivium/client's address options for `transport` ('websocket' or 'tcp') on this instance. */
  frameAddress(transport) {
    return transport === 'tcp'
      ? { host: '127.0.0.1', port: this.tcp }
      : { url: `ws://127.0.0.1:${this.http}/ws` }
  }

  signal(name) {
    this.proc.kill(name)
  }
}
