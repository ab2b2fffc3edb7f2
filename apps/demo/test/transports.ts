// One @trivium/client per transport and format against a started demo: the same call must give the
// same answer on each (HTTP JSON/binary, WebSocket JSON/binary, TCP JSON/binary).
import { createClient, type TriviumClient } from '@trivium/client/node'
import type { Test } from 'tap'
import { endpoints } from '../dist/generated/endpoints.js'
import type { startDemo } from './helpers.js'

export interface NamedClient {
  name: string
  client: TriviumClient
}

/** Listens on a random port (if not yet) and opens six clients with `token`; closed at teardown. */
export async function transportClients(
  t: Test,
  demo: Awaited<ReturnType<typeof startDemo>>,
  token: string,
): Promise<NamedClient[]> {
  const { app, config } = demo
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const tcpPort = app.triviumTcp.address()?.port as number
  const list: NamedClient[] = []
  for (const format of ['json', 'binary'] as const) {
    list.push(
      {
        name: `http ${format}`,
        client: createClient({
          transport: 'http',
          url: `http://127.0.0.1:${port}`,
          endpoints,
          token,
          format,
        }),
      },
      {
        name: `websocket ${format}`,
        client: createClient({
          transport: 'websocket',
          url: `ws://127.0.0.1:${port}/ws`,
          endpoints,
          token,
          format,
        }),
      },
      {
        name: `tcp ${config.tcpMode} ${format}`,
        client: createClient({
          transport: 'tcp',
          host: '127.0.0.1',
          port: tcpPort,
          endpoints,
          token,
          format,
        }),
      },
    )
  }
  t.teardown(async () => {
    await Promise.all(list.map((c) => c.client.close()))
  })
  return list
}

/** The error a call rejects with, as the fields a test compares (or `resolved` when it did not fail). */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
    return 'resolved'
  } catch (err) {
    const e = err as { statusCode?: number; kind?: string; message: string; details?: unknown }
    return { statusCode: e.statusCode, kind: e.kind, message: e.message, details: e.details }
  }
}
