// Redis cost per request on three topologies this run starts on loopback ports: one Redis, a Sentinel
// set (1 primary + 1 replica + 3 sentinels) and a Cluster of 3 primaries (scripts/redis-cluster.mjs).
// Per topology: BENCH_INSTANCES instances (instance.mjs: a rate-limit hit in Redis and a mirrored
// revocation lookup per request) under load, then the event bus alone.
//   request phase: requests/s (summed over the instances), Redis commands per request by name
//     (INFO commandstats; commands run inside a script are listed apart: they are not round trips),
//     round trips per request, Redis CPU µs per request (INFO cpu, used_cpu_sys + used_cpu_user of the
//     data nodes; on the Sentinel set also the replica's and the sentinels' CPU).
//   bus phase: one publisher, S subscribers (S = 1, 4, 16 connections/instances): Redis CPU µs per
//     published message over all data nodes; on the Cluster with sharded pub/sub (SPUBLISH, what
//     @trivium/redis-bus uses) and with plain PUBLISH (broadcast over the cluster bus) for comparison.
// `node bench/redis-topologies/run.mjs` (after building protections, auth, redis-bus); env:
// BENCH_INSTANCES=2 BENCH_DURATION=5 BENCH_CONNECTIONS=50 BENCH_MESSAGES=5000 BENCH_PORT_BASE=17470.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { redisCli, startCluster } from '../../scripts/redis-cluster.mjs'
import { startServer } from '../lib/harness.mjs'

const require = (await import('node:module')).createRequire(import.meta.url)
const autocannon = require('autocannon')
const demo = new URL('../../apps/demo/node_modules/', import.meta.url).pathname
const { Redis, Cluster } = await import(`${demo}ioredis/built/index.js`)
const { RedisPubSub, RedisChannel } = await import(`${demo}@trivium/redis-bus/dist/index.js`)

const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 2)
const DURATION = Number(process.env.BENCH_DURATION ?? 5)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000)
const BASE = Number(process.env.BENCH_PORT_BASE ?? 17470)
const IN_SCRIPT = new Set(['time', 'hmget', 'hset', 'pexpireat'])

const dir = mkdtempSync(join(tmpdir(), 'trivium-topologies-'))
const processes = []
function spawnRedis(args, readyText = 'Ready to accept connections') {
  const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  processes.push(proc)
  let out = ''
  return new Promise((resolve, reject) => {
    proc.stdout.on('data', (c) => {
      out += c
      if (out.includes(readyText)) resolve(proc)
    })
    proc.once('exit', (code) => reject(new Error(`redis-server ${args.join(' ')} exited ${code}:\n${out}`)))
  })
}
async function killAll() {
  await Promise.all(
    processes.map((p) => {
      if (p.exitCode !== null || p.signalCode !== null) return undefined
      const exited = once(p, 'exit')
      p.kill('SIGKILL')
      return exited
    }),
  )
  processes.length = 0
}
async function until(cond, what, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs
  for (;;) {
    try {
      if (await cond()) return
    } catch {}
    if (Date.now() > end) throw new Error(`timed out: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
// --dir: a replica's full sync writes an RDB file even without --save; keep it in the run's temp dir.
const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]

/** Each topology: the instance's spec, the data nodes (ports) and extra processes' ports (sentinels). */
const topologies = {
  async single() {
    const port = BASE
    await spawnRedis(['--port', String(port), ...common])
    return { spec: { port }, data: [port], extra: [], stop: killAll }
  },
  async sentinel() {
    const [primary, replica] = [BASE + 1, BASE + 2]
    const sentinels = [BASE + 3, BASE + 4, BASE + 5]
    await spawnRedis(['--port', String(primary), ...common])
    await spawnRedis(['--port', String(replica), ...common, '--replicaof', '127.0.0.1', String(primary)])
    await until(
      async () => (await redisCli(replica, 'INFO', 'replication')).includes('master_link_status:up'),
      'replica in sync',
    )
    for (const port of sentinels) {
      const conf = join(dir, `sentinel-${port}.conf`)
      writeFileSync(
        conf,
        `port ${port}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 ${primary} 2\nsentinel down-after-milliseconds mymaster 1000\n`,
      )
      await spawnRedis([conf, '--sentinel'], 'Sentinel ID is')
    }
    await until(async () => {
      for (const port of sentinels) {
        const info = await redisCli(port, 'SENTINEL', 'MASTER', 'mymaster')
        if (!/num-other-sentinels\n2\n/.test(info) || !/num-slaves\n1\n/.test(info)) return false
      }
      return true
    }, 'sentinels know each other and the replica')
    return {
      spec: { sentinels: sentinels.map((port) => ({ host: '127.0.0.1', port })), name: 'mymaster' },
      data: [primary],
      extra: [replica, ...sentinels],
      stop: killAll,
    }
  },
  async cluster() {
    const ports = [BASE + 10, BASE + 11, BASE + 12]
    const c = await startCluster({ ports })
    return { spec: { nodes: c.nodes }, data: ports, extra: [], stop: () => c.stop() }
  },
}

async function stats(ports) {
  const out = { cpuS: 0, commands: {} }
  for (const port of ports) {
    const cpu = await redisCli(port, 'INFO', 'cpu')
    out.cpuS += Number(/used_cpu_sys:([\d.]+)/.exec(cpu)[1]) + Number(/used_cpu_user:([\d.]+)/.exec(cpu)[1])
    for (const [, name, calls] of (await redisCli(port, 'INFO', 'commandstats')).matchAll(
      /cmdstat_([\w|]+):calls=(\d+)/g,
    )) {
      out.commands[name] = (out.commands[name] ?? 0) + Number(calls)
    }
  }
  return out
}
function diff(after, before) {
  const commands = {}
  for (const [k, v] of Object.entries(after.commands)) {
    const d = v - (before.commands[k] ?? 0)
    if (d > 0) commands[k] = d
  }
  return { cpuS: after.cpuS - before.cpuS, commands }
}
const INFRA = new Set([
  'info',
  'cluster',
  'ping',
  'client',
  'command',
  'config',
  'sentinel',
  'role',
  'subscribe',
  'psubscribe',
  'hello',
  'replconf',
  'sync',
  'psync',
  'select',
])

function loadInstance(port, connections) {
  let n = 0
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}/ping`,
        connections,
        duration: DURATION,
        requests: [
          {
            setupRequest(req) {
              n = (n + 1) % 1000
              return { ...req, headers: { ...req.headers, 'x-forwarded-for': `10.0.${n >> 8}.${n & 255}` } }
            },
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    )
  })
}

async function requestPhase(name, topo) {
  const prefix = `bench:topo:${randomBytes(4).toString('hex')}:`
  const instances = []
  for (let i = 0; i < INSTANCES; i++) {
    instances.push(
      await startServer(new URL('./instance.mjs', import.meta.url).pathname, {
        BENCH_TOPOLOGY: name,
        BENCH_REDIS: JSON.stringify(topo.spec),
        BENCH_PREFIX: prefix,
      }),
    )
  }
  try {
    await Promise.all(
      instances.map((s) => loadInstance(s.port, Math.max(1, Math.floor(CONNECTIONS / INSTANCES)))),
    )
    const ports = [...topo.data, ...topo.extra]
    const before = { data: await stats(topo.data), all: await stats(ports) }
    const results = await Promise.all(
      instances.map((s) => loadInstance(s.port, Math.max(1, Math.floor(CONNECTIONS / INSTANCES)))),
    )
    const after = { data: await stats(topo.data), all: await stats(ports) }
    const requests = results.reduce((a, r) => a + r.requests.total, 0)
    const non2xx = results.reduce((a, r) => a + r.non2xx + r.errors, 0)
    const d = diff(after.data, before.data)
    const dAll = diff(after.all, before.all)
    const perRequest = {}
    let roundTrips = 0
    for (const [cmd, calls] of Object.entries(d.commands)) {
      if (INFRA.has(cmd.split('|')[0])) continue
      perRequest[IN_SCRIPT.has(cmd) ? `${cmd} (in script)` : cmd] = +(calls / requests).toFixed(3)
      if (!IN_SCRIPT.has(cmd)) roundTrips += calls
    }
    return {
      rps: Math.round(requests / DURATION),
      requests,
      failed: non2xx,
      commandsPerRequest: perRequest,
      roundTripsPerRequest: +(roundTrips / requests).toFixed(3),
      redisCpuUsPerRequest: +((d.cpuS * 1e6) / requests).toFixed(2),
      allRedisProcessesCpuUsPerRequest: +((dAll.cpuS * 1e6) / requests).toFixed(2),
    }
  } finally {
    await Promise.all(instances.map((s) => s.stop()))
  }
}

function connect(name, spec) {
  if (name === 'cluster') return new Cluster(spec.nodes)
  if (name === 'sentinel') return new Redis({ sentinels: spec.sentinels, name: spec.name })
  return new Redis({ port: spec.port })
}

/** Redis CPU per published message with `subscribers` subscriber connections (each an instance's). */
async function busPhase(name, topo, subscribers, mode = 'bus') {
  const base = connect(name, topo.spec)
  base.on('error', () => {})
  const channelName = `bench:bus:${randomBytes(4).toString('hex')}`
  const quiet = { info() {}, warn() {}, error() {} }
  let received = 0
  const closers = []
  let publish
  if (mode === 'broadcast') {
    // The Cluster with plain PUBLISH/SUBSCRIBE (what sharded pub/sub avoids).
    for (let i = 0; i < subscribers; i++) {
      const sub = new Cluster(topo.spec.nodes)
      sub.on('message', () => received++)
      await sub.subscribe(channelName)
      closers.push(() => sub.disconnect())
    }
    const pub = new Cluster(topo.spec.nodes)
    await once(pub, 'ready')
    publish = (m) => pub.publish(channelName, m)
    closers.push(() => pub.disconnect())
  } else {
    for (let i = 0; i < subscribers; i++) {
      const p = new RedisPubSub({ redis: base, logger: quiet })
      new RedisChannel('bus', { pubsub: p, prefix: channelName }).subscribe(() => received++)
      await p.ready()
      closers.push(() => p.close())
    }
    const p = new RedisPubSub({ redis: base, logger: quiet })
    const ch = new RedisChannel('bus', { pubsub: p, prefix: channelName })
    await p.ready()
    publish = (m) => ch.publish(m)
    closers.push(() => p.close())
  }
  const ports = topo.data
  const before = await stats(ports)
  const perNodeBefore = await Promise.all(ports.map((p) => stats([p])))
  for (let i = 0; i < MESSAGES; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) => publish(JSON.stringify({ n: i + j, pad: 'x'.repeat(100) }))),
    )
  }
  await until(() => received >= MESSAGES * subscribers, 'every message received', 60_000)
  const after = await stats(ports)
  const perNodeAfter = await Promise.all(ports.map((p) => stats([p])))
  for (const close of closers) await close()
  base.disconnect()
  const d = diff(after, before)
  return {
    subscribers,
    mode:
      name === 'cluster' ? (mode === 'broadcast' ? 'PUBLISH (broadcast)' : 'SPUBLISH (sharded)') : 'PUBLISH',
    redisCpuUsPerMessage: +((d.cpuS * 1e6) / MESSAGES).toFixed(2),
    perNodeCpuUsPerMessage: perNodeAfter.map(
      (a, i) => +((diff(a, perNodeBefore[i]).cpuS * 1e6) / MESSAGES).toFixed(2),
    ),
  }
}

const wanted = process.argv.slice(2)
const report = {
  load: { before: loadavg().map((x) => +x.toFixed(1)) },
  instances: INSTANCES,
  duration: DURATION,
  connections: CONNECTIONS,
  topologies: {},
}
try {
  for (const name of Object.keys(topologies)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue
    const topo = await topologies[name]()
    try {
      const requests = await requestPhase(name, topo)
      const bus = []
      for (const s of [1, 4, 16]) bus.push(await busPhase(name, topo, s))
      if (name === 'cluster') for (const s of [1, 4, 16]) bus.push(await busPhase(name, topo, s, 'broadcast'))
      report.topologies[name] = { requests, bus }
      console.log(`\n## ${name}`)
      console.log(JSON.stringify(report.topologies[name], null, 1))
    } finally {
      await topo.stop()
    }
  }
} finally {
  await killAll()
  rmSync(dir, { recursive: true, force: true })
}
report.load.after = loadavg().map((x) => +x.toFixed(1))
console.log(`\nload average before/after: ${report.load.before.join(' ')} / ${report.load.after.join(' ')}`)
console.log(`\n${JSON.stringify(report)}`)
