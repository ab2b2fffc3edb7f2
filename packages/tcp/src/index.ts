// @trivium/tcp — every Trivium endpoint over a raw TCP frame protocol (PROTOCOL.md "TCP"): a `net`
// (or `tls`) server started with the app, in direct mode (core pipeline) or inject mode (the
// endpoint's Fastify route). What frames mean is @trivium/frame-session's; bytes are carrier.ts's.
import { createServer as createNetServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer } from 'node:tls'
import { jsonFormat } from '@trivium/core/internal'
import { connectionLogger, FrameServer, FrameSession } from '@trivium/frame-session'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { TcpCarrier } from './carrier.js'
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
    triviumTcp: TriviumTcpServer
  }
}

let counter = 0

/**
 * A socket's errors before its carrier listens (a refused or failed connection is destroyed); removed
 * once the carrier's own listener is on, so a socket holds one listener, not an array of two.
 */
function ignoreError(): void {}

const triviumTcp: FastifyPluginAsync<TriviumTcpOptions> = async (fastify: FastifyInstance, raw) => {
  const options = resolveTcpOptions(
    raw ?? {},
    fastify.trivium.bodyLimit,
    fastify.initialConfig.pluginTimeout ?? 10_000,
  )
  const bridge = options.mode === 'inject' ? new InjectBridge(fastify) : undefined
  const frames = new FrameServer(fastify, 'tcp', options, bridge)
  const log = fastify.log

  function onConnection(socket: Socket): void {
    try {
      socket.on('error', ignoreError)
      if (frames.refusal(socket.remoteAddress)) return void socket.destroy()
      const carrier = new TcpCarrier(socket, options)
      const id = `t${(++counter).toString(36)}`
      const session = new FrameSession(carrier, frames, {
        id,
        clientIp: socket.remoteAddress,
        log: connectionLogger(log, id),
        format: fastify.trivium.formats.get('binary') ?? jsonFormat,
        splitRequest: (payload) => carrier.splitRequest(payload),
      })
      carrier.attach(session)
      socket.off('error', ignoreError)
      frames.add(session)
    } catch (err) {
      log.error({ err }, 'tcp connection setup failed')
      socket.destroy()
    }
  }

  const server: Server = options.tls
    ? createTlsServer(options.tls, onConnection)
    : createNetServer(onConnection)
  // An error before listening is listen()'s own (port in use): it fails the start (onReady below), where
  // the application reports it once.
  server.on('error', (err) => {
    if (server.listening) log.error({ err }, 'tcp server error')
  })

  const tickMs = Math.max(
    10,
    Math.min(1000, Math.ceil(Math.min(options.idleTimeoutMs, options.partialFrameTimeoutMs) / 4)),
  )

  fastify.addHook('onReady', async () => {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port, options.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    frames.start(tickMs)
  })

  fastify.addHook('preClose', async () => {
    const closed = server.listening
      ? new Promise<void>((resolve) => server.close(() => resolve()))
      : undefined
    await frames.shutdownAll()
    await closed
  })

  fastify.decorate('triviumTcp', {
    address() {
      const a = server.address()
      return a && typeof a === 'object' ? { address: a.address, port: a.port } : null
    },
    get connections() {
      return frames.sessions.size
    },
    mode: options.mode,
  } satisfies TriviumTcpServer)
}

export const triviumTcpPlugin = fp(triviumTcp, {
  fastify: '^5.12.1',
  name: '@trivium/tcp',
  dependencies: ['@trivium/core'],
  decorators: { fastify: ['trivium'] },
})
export { triviumTcpPlugin as triviumTcp }
export default triviumTcpPlugin
