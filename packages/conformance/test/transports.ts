// One app per TCP mode, listening on real sockets, and a @trivium/client per transport: for tests that
// run the same calls over HTTP, WebSocket, TCP direct and TCP inject.
import { createClient, type EndpointSpec, type EndpointTable, type TriviumClient } from '@trivium/client/node'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'

export type Target = 'http' | 'websocket' | 'tcp-direct' | 'tcp-inject'
export const TARGETS: Target[] = ['http', 'websocket', 'tcp-direct', 'tcp-inject']

export interface Listening {
  app: FastifyInstance
  http: string
  ws: string
  tcpPort: number
}

/** Starts `app` (with @trivium/websocket and @trivium/tcp registered) on 127.0.0.1, port 0. */
export async function listening(app: FastifyInstance): Promise<Listening> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const tcpPort = app.triviumTcp.address()?.port
  if (tcpPort === undefined) throw new Error('the TCP transport is not listening after app.listen()')
  return { app, http: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${port}/ws`, tcpPort }
}

/**
 * The server of each TCP mode, started on first use by `start(mode)` and closed when the test file
 * ends (HTTP and WebSocket calls use the direct-mode one).
 */
export function serversByMode<S extends Listening>(
  t: Test,
  start: (mode: 'direct' | 'inject') => Promise<S>,
): (target: Target) => Promise<S> {
  const servers = new Map<'direct' | 'inject', Promise<S>>()
  t.teardown(async () => {
    for (const server of servers.values()) await (await server).app.close()
  })
  return (target) => {
    const mode = target === 'tcp-inject' ? 'inject' : 'direct'
    let server = servers.get(mode)
    if (!server) {
      server = start(mode)
      servers.set(mode, server)
    }
    return server
  }
}

/** A client of `target` sending `token` (WebSocket: on the upgrade), closed when `t` ends. */
export function clientFor(
  t: Test,
  server: Listening,
  target: Target,
  endpoints: EndpointTable,
  token: string | undefined,
): TriviumClient {
  const common = { endpoints, format: 'json' as const, reconnectAttempts: 0, ...(token ? { token } : {}) }
  const client =
    target === 'http'
      ? createClient({ ...common, transport: 'http', url: server.http })
      : target === 'websocket'
        ? createClient({ ...common, transport: 'websocket', url: server.ws })
        : createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: server.tcpPort })
  t.teardown(() => client.close())
  return client
}

/** The call's answer, or its error as `{ status, error, message }`. */
export async function outcome(client: TriviumClient, spec: EndpointSpec): Promise<unknown> {
  try {
    return await client.call(spec, {})
  } catch (err) {
    const e = err as { statusCode?: number; name?: string; message?: string }
    return { status: e.statusCode, error: e.name, message: e.message }
  }
}
