// Authentication cost against bare Fastify (target ≥ 0.8× for an authenticated endpoint), with the
// verified-token cache on and off. Then login timing: unknown username vs wrong password (medians).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { compare, requireWrk } from '../lib/harness.mjs'

requireWrk()

const script = new URL('./server.mjs', import.meta.url).pathname

// Like harness.startServer, but also reads the token the server printed.
async function start(env) {
  const child = spawn('taskset', ['-c', '0', process.execPath, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let buffer = ''
  const { port, token } = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      buffer += chunk
      const p = /LISTENING (\d+)/.exec(buffer)
      const t = /TOKEN (\S+)/.exec(buffer)
      if (p && t) resolve({ port: Number(p[1]), token: t[1] })
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  return {
    port,
    token,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
  }
}

const cached = await start({ BENCH_CACHE: '1' })
const uncached = await start({ BENCH_CACHE: '0' })
try {
  const url = (s, p) => `http://127.0.0.1:${s.port}${p}`
  await compare({
    title: 'auth: GET returning {hello:"world"}',
    baseline: 'bare fastify route',
    rounds: Number(process.env.BENCH_ROUNDS ?? 5),
    duration: Number(process.env.BENCH_DURATION ?? 3),
    cases: [
      { name: 'bare fastify route', url: url(cached, '/bare'), pid: cached.pid },
      { name: 'trivium public endpoint (auth mw)', url: url(cached, '/public'), pid: cached.pid },
      {
        name: 'authenticated, verified cache',
        url: url(cached, '/me'),
        pid: cached.pid,
        headers: { authorization: `Bearer ${cached.token}` },
      },
      {
        name: 'authenticated, no cache',
        url: url(uncached, '/me'),
        pid: uncached.pid,
        headers: { authorization: `Bearer ${uncached.token}` },
      },
    ],
  })
} finally {
  await cached.stop()
  await uncached.stop()
}

await import('./micro.mjs')
await import('./login-timing.mjs')
