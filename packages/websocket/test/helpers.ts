import triviumCore, { ValidationException } from '@trivium/core'
import triviumWebSocket, { type TriviumWebSocketOptions } from '@trivium/websocket'
import { decodeWsFrame, encodeWsFrame, type Frame, FrameType } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import WebSocket from 'ws'
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

/** Resolves once `read()` has not changed for `quietMs` (e.g. a generator that stopped producing). */
export async function settled(read: () => number, what: string, quietMs = 300): Promise<number> {
  let last = read()
  let since = Date.now()
  await until(() => {
    const now = read()
    if (now !== last) [last, since] = [now, Date.now()]
    return Date.now() - since >= quietMs
  }, what)
  return last
}
export const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
export const dec = (b: Uint8Array) => JSON.parse(new TextDecoder().decode(b))

export interface Probe {
  finallyRan: number
  produced: number
  /** `slow` calls started and not yet finished. */
  slowRunning: number
}

/** `extend` registers more endpoints and middleware before the app listens. */
export async function buildApp(
  wsOptions: TriviumWebSocketOptions = {},
  extend?: (app: FastifyInstance) => void,
): Promise<{ app: FastifyInstance; url: string; probe: Probe }> {
  const app = Fastify({ logger: false })
  const probe: Probe = { finallyRan: 0, produced: 0, slowRunning: 0 }
  await app.register(triviumCore)
  // A stand-in for @trivium/auth: token "u<id>" authenticates user <id>, with jti "j<id>".
  app.trivium.use(
    async (call, next) => {
      const token = call.credential
      if (typeof token === 'string' && token.startsWith('u')) {
        call.context.user_id = Number(token.slice(1))
        call.identity = {
          userId: Number(token.slice(1)),
          roles: [],
          permissions: [],
          tokenId: `j${token.slice(1)}`,
          expiresAt: Date.now() + 3600_000,
        }
      }
      return next()
    },
    { name: 'auth' },
  )
  await app.register(triviumWebSocket, wsOptions)
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  app.trivium.endpoint('slow', { method: 'POST', url: '/slow' }, async (body: { ms: number }) => {
    probe.slowRunning++
    try {
      await sleep(body.ms)
    } finally {
      probe.slowRunning--
    }
    return { slept: body.ms }
  })
  app.trivium.endpoint('whoami', { method: 'GET', url: '/whoami' }, (_b, call) => ({
    user: call.context.user_id ?? null,
    protocol: call.protocol,
    token: call.query.token ?? null,
    header: call.headers['x-test'] ?? null,
    ip: call.clientIp,
  }))
  app.trivium.endpoint('meta', { method: 'POST', url: '/meta' }, (body, call) => ({
    body,
    metadata: { ...call.metadata },
    user: call.context.user_id ?? null,
  }))
  app.trivium.endpoint('boom', { method: 'POST', url: '/boom' }, () => {
    throw new Error('secret internals')
  })
  app.trivium.endpoint('invalid', { method: 'POST', url: '/invalid' }, () => {
    throw new ValidationException('Invalid request: name is required', [
      { field: 'name', message: 'is required' },
    ])
  })
  app.trivium.stream(
    'count',
    { method: 'POST', url: '/count' },
    async function* (body: { n: number; ms?: number; size?: number }, call) {
      try {
        for (let i = 0; i < body.n; i++) {
          if (body.ms) await sleep(body.ms)
          if (call.signal.aborted) return
          probe.produced++
          yield body.size ? { i, pad: 'x'.repeat(body.size) } : { i }
        }
      } finally {
        probe.finallyRan++
      }
    },
  )
  app.trivium.stream('failing', { method: 'POST', url: '/failing' }, async function* () {
    yield { i: 0 }
    throw new Error('stream broke')
  })
  extend?.(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return { app, url: `ws://127.0.0.1:${port}/ws`, probe }
}

export class Client {
  readonly frames: Frame[] = []
  closeCode: number | undefined
  closeReason = ''
  readonly closed: Promise<void>
  #waiters: Array<() => void> = []

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      this.frames.push(decodeWsFrame(new Uint8Array(data)))
      this.#wake()
    })
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeCode = code
        this.closeReason = reason.toString()
        this.#wake()
        resolve()
      }),
    )
    ws.on('error', () => {})
  }

  static async open(url: string, headers?: Record<string, string>): Promise<Client> {
    const ws = new WebSocket(url, { headers })
    const client = new Client(ws)
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
      ws.once('unexpected-response', (_req, res) =>
        reject(Object.assign(new Error('unexpected-response'), { status: res.statusCode })),
      )
    })
    return client
  }

  #wake(): void {
    const w = this.#waiters
    this.#waiters = []
    for (const f of w) f()
  }

  send(frame: Frame): void {
    this.ws.send(encodeWsFrame(frame))
  }

  request(requestId: number, endpoint: string, body: unknown): void {
    this.send({ type: FrameType.REQUEST, requestId, endpoint, payload: enc(body) })
  }

  /** Waits until `pred` holds over the frames received so far (or the socket closes). */
  async until(pred: (frames: Frame[]) => boolean, timeoutMs = 10_000): Promise<Frame[]> {
    const deadline = Date.now() + waitBound(timeoutMs)
    while (!pred(this.frames)) {
      if (this.closeCode !== undefined || Date.now() > deadline) break
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
    return this.frames
  }

  async reply(requestId: number, type?: number): Promise<Frame | undefined> {
    const match = (f: Frame) => f.requestId === requestId && (type === undefined || f.type === type)
    await this.until((fs) => fs.some(match))
    return this.frames.find(match)
  }
}

/** Asserts the raw answer to an upgrade no WebSocket route serves: 400 error body, `Connection: close`. */
export function assertUnservedRefusal(t: Test, answer: string, servedAt: string, label = 'status'): void {
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/, label)
  t.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i)
  t.match(head, /\r\nconnection: close\r\n/i)
  t.match(JSON.parse(body), {
    statusCode: 400,
    code: 'TRV_VALIDATION',
    error: 'ValidationException',
    message: `WebSocket upgrades are served at ${servedAt} only`,
  })
}
