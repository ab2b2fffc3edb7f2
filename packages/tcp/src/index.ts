// @trivium/tcp — every Trivium endpoint over a raw TCP frame protocol (PROTOCOL.md "TCP"): a `net`
// (or `tls`) server started with the app, in direct mode (core pipeline) or inject mode (app.inject()).
import { createServer as createNetServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { ServiceUnavailableException } from '@trivium/core'
import { SessionHub } from '@trivium/wire/sessions'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { SHUTDOWN_MESSAGE, TcpConnection, type TcpContext } from './connection.js'
import { InjectBridge } from './inject.js'
import { resolveTcpOptions, type TriviumTcpOptions } from './options.js'

export type { TriviumTcpOptions } from './options.js'

export interface TriviumTcpServer {
  /** The bound address once the app is ready. */
  address(): { address: string; port: number } | null
  readonly connections: number
  readonly mode: 'direct' | 'inject'
}

declare module 'fastify' {
  interface FastifyInstance {
    push: SessionHub
    triviumTcp: TriviumTcpServer
  }
}

let counter = 0

const triviumTcp: FastifyPluginAsync<TriviumTcpOptions> = async (fastify: FastifyInstance, raw) => {
  const options = resolveTcpOptions(raw ?? {}, fastify.trivium.bodyLimit)
  if (!fastify.hasDecorator('push')) {
    const hub = new SessionHub()
    fastify.decorate('push', hub)
    fastify.addHook('onClose', async () => hub.close())
  }
  const connections = new Set<TcpConnection>()
  const perIp = new Map<string, number>()
  let shuttingDown = false
  const bridge = options.mode === 'inject' ? new InjectBridge(fastify) : undefined

  const ctx: TcpContext = {
    trivium: fastify.trivium,
    hub: fastify.push,
    options,
    bridge,
    log: fastify.log,
    isShuttingDown: () => shuttingDown,
    shutdownError: new ServiceUnavailableException(SHUTDOWN_MESSAGE),
    onClosed: (c) => {
      if (!connections.delete(c)) return
      const ip = c.clientIp ?? 'unknown'
      const n = (perIp.get(ip) ?? 1) - 1
      if (n <= 0) perIp.delete(ip)
      else perIp.set(ip, n)
    },
  }

  function onConnection(socket: Socket): void {
    try {
      socket.on('error', () => {})
      const ip = socket.remoteAddress ?? 'unknown'
      const fromIp = perIp.get(ip) ?? 0
      if (
        shuttingDown ||
        connections.size >= options.maxConnections ||
        fromIp >= options.maxConnectionsPerIp
      ) {
        socket.destroy()
        return
      }
      perIp.set(ip, fromIp + 1)
      const c = new TcpConnection(`t${(++counter).toString(36)}`, socket, ctx)
      connections.add(c)
      fastify.push.add(c)
    } catch (err) {
      fastify.log.error({ err }, 'tcp connection setup failed')
      socket.destroy()
    }
  }

  const server: Server = options.tls
    ? createTlsServer(options.tls, onConnection)
    : createNetServer(onConnection)
  server.on('error', (err) => fastify.log.error({ err }, 'tcp server error'))

  const tickMs = Math.max(
    10,
    Math.min(1000, Math.ceil(Math.min(options.idleTimeoutMs, options.partialFrameTimeoutMs) / 4)),
  )
  let timer: NodeJS.Timeout | undefined

  fastify.addHook('onReady', async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, options.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    timer = setInterval(() => {
      const now = Date.now()
      for (const c of connections) {
        try {
          c.tick(now)
        } catch (err) {
          c.log.error({ err }, 'tcp tick failed')
        }
      }
    }, tickMs)
    timer.unref()
  })

  fastify.addHook('preClose', async () => {
    shuttingDown = true
    if (timer) clearInterval(timer)
    const closed = server.listening
      ? new Promise<void>((resolve) => server.close(() => resolve()))
      : Promise.resolve()
    await Promise.all([...connections].map((c) => c.goAway(options.shutdownGraceMs)))
    await closed
  })

  fastify.decorate('triviumTcp', {
    address() {
      const a = server.address()
      return a && typeof a === 'object' ? { address: a.address, port: a.port } : null
    },
    get connections() {
      return connections.size
    },
    mode: options.mode,
  } satisfies TriviumTcpServer)
}

export const triviumTcpPlugin = fp(triviumTcp, {
  fastify: '5.x',
  name: '@trivium/tcp',
  dependencies: ['@trivium/core'],
})
export { triviumTcpPlugin as triviumTcp }
export default triviumTcpPlugin
