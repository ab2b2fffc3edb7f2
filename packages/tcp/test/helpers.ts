import { connect, type Socket } from 'node:net'
import triviumCore from '@trivium/core'
import triviumTcp, { type TriviumTcpOptions } from '@trivium/tcp'
import { encodeMetadata, encodeTcpFrame, type Frame, FrameType, TcpFrameReader } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import { waitBound } from '../../../scripts/test/waits.js'

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `cond` until it holds; the deadline is generous so that a loaded machine only makes it slower. */
export async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitBound(timeoutMs)
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}
export const dec = (b: Uint8Array | string) =>
  JSON.parse(typeof b === 'string' ? b : new TextDecoder().decode(b))

export interface Probe {
  finallyRan: number
  hookRuns: number
}

export async function buildApp(
  tcp: TriviumTcpOptions = {},
): Promise<{ app: FastifyInstance; port: number; probe: Probe }> {
  const app = Fastify({ logger: false })
  const probe: Probe = { finallyRan: 0, hookRuns: 0 }
  await app.register(triviumCore)
  app.addHook('onRequest', async (req) => {
    if (req.url.startsWith('/whoami')) probe.hookRuns++
  })
  app.trivium.use(
    async (call, next) => {
      const token = call.credential
      // `u<id>`: user <id>, token id `j<id>`; `u<id>:<exp>` adds an expiry (`exp`, seconds).
      if (typeof token === 'string' && /^u\d/.test(token)) {
        const [id, exp] = token.slice(1).split(':')
        call.context.user_id = Number(id)
        call.identity = {
          userId: Number(id),
          roles: [],
          permissions: [],
          tokenId: `j${token.slice(1)}`,
          ...(exp !== undefined ? { expiresAt: Number(exp) * 1000 } : {}),
        }
      }
      return next()
    },
    { name: 'auth' },
  )
  await app.register(triviumTcp, { port: 0, ...tcp })
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  app.trivium.endpoint('slow', { method: 'POST', url: '/slow' }, async (body: { ms: number }) => {
    await sleep(body.ms)
    return { slept: body.ms }
  })
  app.trivium.endpoint('whoami', { method: 'GET', url: '/whoami' }, (_b, call) => ({
    user: call.context.user_id ?? null,
    protocol: call.protocol,
    metadata: { ...call.metadata },
    ip: call.clientIp ?? null,
  }))
  app.trivium.endpoint(
    'items.get',
    { method: 'GET', url: '/items/:id' },
    (body: { id: string; q?: string }) => body,
  )
  app.trivium.stream(
    'count',
    { method: 'POST', url: '/count' },
    async function* (body: { n: number; ms?: number }, call) {
      try {
        for (let i = 0; i < body.n; i++) {
          if (body.ms) await sleep(body.ms)
          if (call.signal.aborted) return
          yield { i }
        }
      } finally {
        probe.finallyRan++
      }
    },
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, port: app.triviumTcp.address()?.port as number, probe }
}

export function requestFrame(
  requestId: number,
  endpoint: string,
  body: unknown,
  meta: Record<string, string> = {},
): Uint8Array {
  const m = encodeMetadata({ format: 'json', ...meta })
  const b = body === undefined ? new Uint8Array() : new TextEncoder().encode(JSON.stringify(body))
  const payload = new Uint8Array(m.length + b.length)
  payload.set(m)
  payload.set(b, m.length)
  return encodeTcpFrame({ type: FrameType.REQUEST, requestId, endpoint, payload })
}

export class TcpClient {
  readonly frames: Frame[] = []
  ended = false
  readonly closed: Promise<void>
  readonly #reader = new TcpFrameReader({ maxFrameBytes: 1 << 24 })

  constructor(readonly socket: Socket) {
    socket.on('data', (c: Buffer) => this.frames.push(...this.#reader.push(c)))
    socket.on('error', () => {})
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.ended = true
        resolve()
      }),
    )
  }

  static async open(port: number): Promise<TcpClient> {
    const socket = connect(port, '127.0.0.1')
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    return new TcpClient(socket)
  }

  write(bytes: Uint8Array): void {
    this.socket.write(bytes)
  }

  async until(pred: (fs: Frame[]) => boolean, timeoutMs = 10_000): Promise<Frame[]> {
    const deadline = Date.now() + waitBound(timeoutMs)
    while (!pred(this.frames) && !this.ended && Date.now() < deadline) await sleep(10)
    return this.frames
  }

  async reply(requestId: number, type?: number): Promise<Frame | undefined> {
    const match = (f: Frame) => f.requestId === requestId && (type === undefined || f.type === type)
    await this.until((fs) => fs.some(match))
    return this.frames.find(match)
  }
}
