// A Redis Cluster of real redis-server processes for tests and benches: `startCluster({ ports })` starts one
// cluster-enabled node per port (data in a mkdtemp dir, no persistence), joins them with
// `redis-cli --cluster create`, waits until every node reports `cluster_state:ok` and agrees on the
// slots, and returns a handle whose `stop()` kills every process it started and removes the dir.
// Conditions, never fixed sleeps. Used by the Cluster tests of the packages and bench/redis-topologies.
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** `redis-cli -p <port> <args…>`; resolves with stdout. */
export async function redisCli(port, ...args) {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args.map(String)], { timeout: 60_000 })
  return stdout
}

async function until(cond, timeoutMs, what) {
  const start = Date.now()
  for (;;) {
    let ok = false
    try {
      ok = await cond()
    } catch {
      ok = false
    }
    if (ok) return
    if (Date.now() - start > timeoutMs) throw new Error(`redis-cluster: timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function startNode(port, dir, extra) {
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      '2000',
      '--appendonly',
      'no',
      '--save',
      '',
      '--dir',
      dir,
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  const ready = new Promise((resolve, reject) => {
    proc.stdout.on('data', (chunk) => {
      out += chunk
      if (out.includes('Ready to accept connections')) resolve()
    })
    proc.once('exit', (code) => reject(new Error(`redis-server :${port} exited with ${code}:\n${out}`)))
  })
  return { proc, ready }
}

/** The node (port) that serves `key`'s slot, and the slot. */
export async function ownerOf(port, key) {
  const slot = Number((await redisCli(port, 'CLUSTER', 'KEYSLOT', key)).trim())
  const slots = await redisCli(port, '--json', 'CLUSTER', 'SLOTS').catch(() => undefined)
  const table = slots ? JSON.parse(slots) : undefined
  if (table) {
    for (const [from, to, [, owner]] of table) if (slot >= from && slot <= to) return { slot, port: owner }
  }
  const nodes = await redisCli(port, 'CLUSTER', 'NODES')
  for (const line of nodes.trim().split('\n')) {
    const parts = line.split(' ')
    const nodePort = Number(parts[1].split(':')[1].split('@')[0])
    for (const range of parts.slice(8)) {
      const [a, b = a] = range.split('-').map(Number)
      if (slot >= a && slot <= b) return { slot, port: nodePort }
    }
  }
  throw new Error(`redis-cluster: no owner for slot ${slot}`)
}

/**
 * Starts a cluster of `ports.length` nodes: 3 or more primaries, or with `replicas: 1` half of them
 * primaries and half replicas (6 or more ports). `redisArgs`: extra redis-server arguments. The handle's
 * `stop()` is idempotent; call it in t.teardown.
 */
export async function startCluster({ ports, replicas = 0, redisArgs = [], timeoutMs = 60_000 }) {
  if (!Array.isArray(ports) || ports.length < 3 * (1 + replicas)) {
    throw new TypeError(`startCluster: needs ${3 * (1 + replicas)} or more ports`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'trivium-cluster-'))
  const nodes = ports.map((port) => ({ port, ...startNode(port, dir, redisArgs) }))
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    await Promise.all(
      nodes.map(({ proc }) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return undefined
        const exited = new Promise((r) => proc.once('exit', r))
        proc.kill('SIGKILL')
        return exited
      }),
    )
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await Promise.all(nodes.map((n) => n.ready))
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: timeoutMs },
    )
    await until(
      async () => {
        for (const port of ports) {
          if (!(await redisCli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false
          // Every node knows every other one and all 16384 slots are assigned in its view.
          const nodesOut = (await redisCli(port, 'CLUSTER', 'NODES')).trim().split('\n')
          if (nodesOut.length !== ports.length) return false
          if (nodesOut.some((l) => /handshake|noaddr|fail/.test(l.split(' ')[2]))) return false
          const replication = await redisCli(port, 'INFO', 'replication')
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return false
        }
        return true
      },
      timeoutMs,
      'cluster_state:ok on every node',
    )
  } catch (err) {
    await stop()
    throw err
  }
  return {
    ports,
    dir,
    nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    /** The redis-server process of `port`. */
    process: (port) => nodes.find((n) => n.port === port)?.proc,
    /** Kills the node on `port` (SIGKILL) and waits for its exit. */
    async kill(port) {
      const proc = nodes.find((n) => n.port === port)?.proc
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGKILL')
      await exited
    },
    /** `redis-cli -p <port> <args…>` (stdout). */
    cli: redisCli,
    stop,
  }
}

/**
 * Moves `slot` from node `fromPort` to node `toPort` the way `redis-cli --cluster reshard` does:
 * IMPORTING on the target, MIGRATING on the source, MIGRATE of its keys in batches, then SETSLOT NODE on
 * both (and on every other node). While it runs, clients get ASK replies for keys already moved.
 * `onMigrating` runs after MIGRATING/IMPORTING are set and before the first key moves (to time load).
 */
export async function migrateSlot({ slot, fromPort, toPort, allPorts, onMigrating, batch = 10 }) {
  const id = async (port) => (await redisCli(port, 'CLUSTER', 'MYID')).trim()
  const fromId = await id(fromPort)
  const toId = await id(toPort)
  await redisCli(toPort, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId)
  await redisCli(fromPort, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId)
  if (onMigrating) await onMigrating()
  let moved = 0
  for (;;) {
    const keys = (await redisCli(fromPort, 'CLUSTER', 'GETKEYSINSLOT', slot, batch))
      .trim()
      .split('\n')
      .filter(Boolean)
    if (keys.length === 0) break
    await redisCli(fromPort, 'MIGRATE', '127.0.0.1', toPort, '', 0, 5000, 'REPLACE', 'KEYS', ...keys)
    moved += keys.length
  }
  // The target first, then the source: the order redis-cli uses (no window where neither owns it).
  await redisCli(toPort, 'CLUSTER', 'SETSLOT', slot, 'NODE', toId)
  await redisCli(fromPort, 'CLUSTER', 'SETSLOT', slot, 'NODE', toId)
  for (const port of allPorts ?? []) {
    if (port !== fromPort && port !== toPort) await redisCli(port, 'CLUSTER', 'SETSLOT', slot, 'NODE', toId)
  }
  return { moved }
}
