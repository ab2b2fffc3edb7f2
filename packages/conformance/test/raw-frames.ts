// Raw frame clients for the frame-session tests: the same calls over WebSocket and TCP, with several
// frames in one write (the way a hostile or batching client sends them).
import { connect } from 'node:net'
import triviumCore from '@trivium/core'
import type { TriviumTcpOptions } from '@trivium/tcp'
import triviumTcp from '@trivium/tcp'
import type { TriviumWebSocketOptions } from '@trivium/websocket'
import triviumWebSocket from '@trivium/websocket'
import {
  decodeWsFrame,
  encodeMetadata,
  encodeTcpFrame,
  encodeWsFrame,
  type Frame,
  FrameType,
  TcpFrameReader,
} from '@trivium/wire'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import WebSocket from 'ws'
import { waitBound } from '../../../scripts/test/waits.js'

export type Carriage = 'websocket' | 'tcp-direct' | 'tcp-inject'
export const CARRIAGES: Carriage[] = ['websocket', 'tcp-direct', 'tcp-inject']

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `cond` until it holds; the deadline is generous so that a loaded machine only makes it slower. */
export async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitBound(timeoutMs)
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}
export const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v))
export const dec = (b: Uint8Array | undefined) => JSON.parse(new TextDecoder().decode(b))

export interface RawApp {
  app: FastifyInstance
  wsUrl: string
  tcpPort: number
  /** How many `slow` handlers have finished. */
  finished: () => number
  /** How many `slow` handlers have started. */
  started: () => number
}

/**
 * A server with both frame transports. Token `u<id>[:<exp seconds>]` authenticates user <id> (a
 * stand-in for @trivium/auth that fills `call.identity`, the documented contract).
 */
export async function rawApp(
  options: {
    ws?: TriviumWebSocketOptions
    tcp?: TriviumTcpOptions
    fastify?: FastifyServerOptions
    tcpFirst?: boolean
    /** Registers more endpoints before the app listens. */
    setup?: (app: FastifyInstance) => void
  } = {},
): Promise<RawApp> {
  const app = Fastify({ logger: false, ...options.fastify })
  await app.register(triviumCore)
  app.trivium.use(
    async (call, next) => {
      const token = call.credential
      if (typeof token === 'string' && /^u\d/.test(token)) {
        const [id, exp] = token.slice(1).split(':')
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
  if (options.tcpFirst) {
    await app.register(triviumTcp, { port: 0, ...options.tcp })
    await app.register(triviumWebSocket, options.ws ?? {})
  } else {
    await app.register(triviumWebSocket, options.ws ?? {})
    await app.register(triviumTcp, { port: 0, ...options.tcp })
  }
  let finished = 0
  let started = 0
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
  app.trivium.endpoint('slow', { method: 'POST', url: '/slow' }, async (body: { ms: number }, call) => {
    started++
    try {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, body.ms)
        call.signal.addEventListener('abort', () => {
          clearTimeout(timer)
          resolve()
        })
      })
      return { slept: body.ms }
    } finally {
      finished++
    }
  })
  options.setup?.(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  return {
    app,
    wsUrl: `ws://127.0.0.1:${port}/ws?format=json`,
    tcpPort: (app.triviumTcp.address() as { port: number }).port,
    finished: () => finished,
    started: () => started,
  }
}

/** One raw connection: frames received, and frames sent together in one write. */
export class RawClient {
  readonly frames: Frame[] = []
  ended = false
  closeCode: number | undefined
  closeReason = ''
  readonly closed: Promise<void>
  #resolveClosed!: () => void
  #writeMany!: (frames: Frame[]) => void
  #encode!: (frame: Frame) => Uint8Array
  #send!: (bytes: Uint8Array) => void

  private constructor(readonly carriage: Carriage) {
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve
    })
  }

  /** `format`: the payload format of the connection (WebSocket) or of each REQUEST (TCP metadata); default JSON. */
  static async open(
    carriage: Carriage,
    server: RawApp | Pick<RawApp, 'wsUrl' | 'tcpPort'>,
    token?: string,
    format: 'json' | 'binary' = 'json',
  ): Promise<RawClient> {
    const client = new RawClient(carriage)
    if (carriage === 'websocket') {
      const wsUrl = server.wsUrl.replace('format=json', `format=${format}`)
      const url = token ? `${wsUrl}&token=${token}` : wsUrl
      const ws = new WebSocket(url)
      ws.on('message', (data: Buffer) => client.frames.push(decodeWsFrame(new Uint8Array(data))))
      ws.on('close', (code, reason) => {
        client.ended = true
        client.closeCode = code
        client.closeReason = reason.toString()
        client.#resolveClosed()
      })
      ws.on('error', () => {})
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve())
        ws.once('error', reject)
      })
      // One WebSocket message is one frame: "one write" is several messages sent in one turn.
      client.#encode = encodeWsFrame
      client.#send = (bytes) => ws.send(bytes)
      // Corked, so frames sent together arrive together (as one TCP write carries several frames).
      const raw = (ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket
      client.#writeMany = (frames) => {
        raw.cork()
        for (const f of frames) ws.send(encodeWsFrame(f))
        raw.uncork()
      }
      client.close = () => ws.terminate()
      return client
    }
    const socket = connect(server.tcpPort, '127.0.0.1')
    // As every frame client should (the server and @trivium/client do): without it, a batch written
    // while the previous one is unacknowledged waits for the server's delayed ACK (~40 ms, Nagle),
    // and a test that waits 20 ms for answers nothing else is waiting on sees none.
    socket.setNoDelay(true)
    const reader = new TcpFrameReader({ maxFrameBytes: 16 * 1024 * 1024 })
    socket.on('data', (chunk) => client.frames.push(...reader.push(chunk)))
    socket.on('close', () => {
      client.ended = true
      client.#resolveClosed()
    })
    socket.on('error', () => {})
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve())
      socket.once('error', reject)
    })
    const metadata: Record<string, string> = token ? { format, auth_token: token } : { format }
    client.#encode = (f) =>
      encodeTcpFrame(
        f.type === FrameType.REQUEST ? { ...f, payload: concat(encodeMetadata(metadata), f.payload) } : f,
      )
    client.#send = (bytes) => socket.write(bytes)
    client.#writeMany = (frames) => socket.write(Buffer.concat(frames.map(client.#encode)))
    client.close = () => socket.destroy()
    return client
  }

  /** Sends the frames in one write (TCP) or one event-loop turn (WebSocket). */
  write(...frames: Frame[]): void {
    this.#writeMany(frames)
  }

  close: () => void = () => {}

  /** Sends `frame` with request id 0, which the encoders refuse: encoded with id 1, then patched. */
  writeWithIdZero(frame: Frame): void {
    const bytes = this.#encode({ ...frame, requestId: 1 })
    bytes.fill(0, this.carriage === 'websocket' ? 1 : 4, this.carriage === 'websocket' ? 5 : 8)
    this.#send(bytes)
  }

  /** Waits until `pred` holds over the frames received (or the connection ends, or 10 s pass). */
  async until(pred: (frames: Frame[]) => boolean, timeoutMs = 10_000): Promise<Frame[]> {
    const deadline = Date.now() + waitBound(timeoutMs)
    while (!pred(this.frames) && !this.ended && Date.now() < deadline) await sleep(5)
    return this.frames
  }

  answerTo(id: number): Frame | undefined {
    return this.frames.find(
      (f) => f.requestId === id && (f.type === FrameType.RESPONSE || f.type === FrameType.ERROR),
    )
  }
}

export function request(requestId: number, endpoint: string, body: unknown): Frame {
  return { type: FrameType.REQUEST, requestId, endpoint, payload: json(body) }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}
