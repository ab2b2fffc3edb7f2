// Issue 11: `start:cluster` (dist/cluster.js) runs N node:cluster workers on one HTTP port and one TCP
// port, and refuses to start without PostgreSQL and Redis.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import net from 'node:net'
import { fileURLToPath } from 'node:url'
import { encodeMetadata, encodeTcpFrame, FrameType, TcpFrameReader } from '@trivium/wire'
import t from 'tap'
import {
  api,
  backendEnv,
  dropBackend,
  login,
  newBackend,
  registerAndLogin,
  startProcess,
  until,
} from './scale-helpers.js'

/** GET /health on a new connection each time (keep-alive would stay on one worker). */
function healthOnNewConnection(port: number): Promise<{ status: number; version: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      let body = ''
      res.on('data', (c) => {
        body += c
      })
      res.on('end', () => resolve({ status: res.statusCode!, version: JSON.parse(body).version }))
    })
    req.on('error', reject)
  })
}

async function healthOverTcp(port: number): Promise<string> {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  const reader = new TcpFrameReader()
  socket.write(
    encodeTcpFrame({
      type: FrameType.REQUEST,
      requestId: 1,
      endpoint: 'health',
      payload: Buffer.concat([encodeMetadata({ format: 'json' }), Buffer.from('{}')]),
    }),
  )
  for await (const chunk of socket) {
    const [frame] = reader.push(chunk)
    if (frame) {
      socket.destroy()
      if (frame.type !== FrameType.RESPONSE) throw new Error(`health over TCP: frame type ${frame.type}`)
      return JSON.parse(Buffer.from(frame.payload).toString()).version
    }
  }
  throw new Error('no answer over TCP')
}

t.test('start:cluster with 2 workers: one port, both workers answer', async (t) => {
  const backend = newBackend()
  const cluster = await startProcess(
    'cluster',
    { ...backendEnv(backend), WORKERS: '2', INSTANCE_NAME: 'node' },
    { script: 'cluster' },
  )
  t.teardown(async () => {
    await cluster.stop()
    await dropBackend(backend)
  })
  t.ok(cluster.tcp, 'a TCP port')
  // The first worker's TRIVIUM_PORTS line came first; the primary says when every worker listens and
  // GET /health/ready answers 200.
  t.ok(await until(async () => cluster.output().includes('Trivium Tasks cluster: 2 workers ready on'), 20000))

  const seen = new Map<string, number>()
  for (let i = 0; i < 20; i++) {
    const { status, version } = await healthOnNewConnection(cluster.http)
    t.equal(status, 200)
    seen.set(version, (seen.get(version) ?? 0) + 1)
  }
  t.comment(`20 connections: ${JSON.stringify(Object.fromEntries(seen))}`)
  t.same([...seen.keys()].sort(), ['0.1.0 (node-w1)', '0.1.0 (node-w2)'], 'both workers answered')

  const tcpSeen = new Set<string>()
  for (let i = 0; i < 10; i++) tcpSeen.add(await healthOverTcp(cluster.tcp!))
  t.same([...tcpSeen].sort(), ['0.1.0 (node-w1)', '0.1.0 (node-w2)'], 'both workers answer over TCP')

  // One service: a token issued by one worker works on the other, a logout on one holds on both.
  const { tokens } = await registerAndLogin(cluster.base, 'frank')
  const meAll = async () => {
    const codes = new Set<number>()
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${cluster.base}/auth/me`, {
        headers: { authorization: `Bearer ${tokens.accessToken}`, connection: 'close' },
      })
      codes.add(res.status)
      await res.arrayBuffer()
    }
    return [...codes]
  }
  t.same(await meAll(), [200])
  t.equal(
    (await api(cluster.base, 'POST', '/auth/logout', { token: tokens.accessToken, body: {} })).status,
    200,
  )
  t.same(await meAll(), [401])
  t.ok((await login(cluster.base, 'frank')).accessToken)
  t.notMatch(cluster.output(), /"level":(50|60)/, 'no error logged')
})

t.test('start:cluster refuses to start without DATABASE_URL and REDIS_URL', async (t) => {
  const script = fileURLToPath(new URL('../dist/cluster.js', import.meta.url))
  for (const [env, missing] of [
    [{ DATABASE_URL: '', REDIS_URL: '' }, 'DATABASE_URL and REDIS_URL'],
    [{ DATABASE_URL: 'postgres://127.0.0.1:1/x', REDIS_URL: '' }, 'REDIS_URL'],
    [{ DATABASE_URL: '', REDIS_URL: 'redis://127.0.0.1:1' }, 'DATABASE_URL'],
  ] as const) {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, ...env, WORKERS: '2', PORT: '0', TCP_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (c) => {
      err += c
    })
    const [code] = await once(child, 'exit')
    t.equal(code, 1, `exits with 1 without ${missing}`)
    t.match(
      err,
      `Trivium Tasks cluster: refusing to start without ${missing}: workers are separate processes`,
    )
  }
})
