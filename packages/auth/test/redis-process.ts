// A private redis-server for the tests that restart or partition Redis, and a proxy that holds bytes.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import net from 'node:net'

export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  await new Promise((r) => server.close(r))
  return port
}

export async function startRedis(port: number): Promise<ChildProcess> {
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (chunk) => {
      out += chunk
      if (out.includes('Ready to accept connections')) resolve()
    })
    proc.once('exit', (code) => reject(new Error(`redis-server exited with ${code}:\n${out}`)))
  })
  return proc
}

/** Forwards bytes both ways; `hold()` keeps them (the connection stays open), `release()` delivers them. */
export async function holdingProxy(target: number) {
  let held = false
  let queue: [net.Socket, Buffer][] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target, '127.0.0.1')
    sockets.add(inbound).add(outbound)
    const forward = (to: net.Socket) => (data: Buffer) => (held ? queue.push([to, data]) : to.write(data))
    inbound.on('data', forward(outbound))
    outbound.on('data', forward(inbound))
    const close = () => {
      inbound.destroy()
      outbound.destroy()
    }
    inbound.on('error', close).on('close', close)
    outbound.on('error', close).on('close', close)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    port: (server.address() as net.AddressInfo).port,
    hold: () => {
      held = true
    },
    release: () => {
      held = false
      for (const [to, data] of queue) to.write(data)
      queue = []
    },
    /** Resets every connection; what was held is lost. */
    drop: () => {
      held = false
      queue = []
      for (const s of sockets) s.destroy()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
