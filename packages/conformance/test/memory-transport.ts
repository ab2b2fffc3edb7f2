// A fourth frame transport, for tests: frames over an in-process duplex. The whole server side is the
// carrier below plus a few lines of wiring — dispatch, admission, streams, push, identity and shutdown
// come from @trivium/frame-session, exactly as for WebSocket and TCP. The client side is a
// WebSocket-like object, so the ordinary @trivium/client WebSocket client runs over it unchanged.
import { CLIENT_STREAM_WINDOW_BYTES } from '@trivium/conformance'
import { websocketCredential } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import {
  type CloseKind,
  type FrameCarrier,
  FrameServer,
  FrameSession,
  resolveFrameSessionOptions,
} from '@trivium/frame-session'
import {
  DEFAULT_MAX_FRAME_BYTES,
  decodeMetadata,
  decodeWsFrame,
  encodeWsFrame,
  type Frame,
} from '@trivium/wire'

/** Bytes the in-memory server delivered to its clients (what would be on a wire). */
export const memoryWire = { delivered: 0 }

import type { FastifyInstance } from 'fastify'

/** The server end of one in-memory connection. */
class MemoryCarrier implements FrameCarrier {
  session!: FrameSession
  open = true
  readonly backlog = 0
  readonly maxFrameBytes = DEFAULT_MAX_FRAME_BYTES
  constructor(private readonly peer: MemoryWebSocket) {}

  sendBody(type: number, requestId: number, body: Uint8Array | string): void {
    const payload = typeof body === 'string' ? new TextEncoder().encode(body) : body
    const bytes = new Uint8Array(5 + payload.length)
    bytes[0] = type
    new DataView(bytes.buffer).setUint32(1, requestId)
    bytes.set(payload, 5)
    this.#deliver(bytes)
  }
  sendFrame(frame: Frame): void {
    this.#deliver(encodeWsFrame(frame))
  }
  drain(): Promise<void> {
    return Promise.resolve()
  }
  close(_kind: CloseKind, message: string): void {
    this.open = false
    setImmediate(() => this.peer.closedByServer(message))
  }
  /** Bytes from the client: one message, one frame. */
  receive(bytes: Uint8Array): void {
    this.session.touch()
    try {
      this.session.receive(decodeWsFrame(bytes))
    } catch (err) {
      this.session.rejectFrame(err, false)
    }
  }
  #deliver(bytes: Uint8Array): void {
    memoryWire.delivered += bytes.length
    if (this.open) setImmediate(() => this.peer.deliver(bytes))
  }
}

/** Registers the in-memory transport on `app`; returns the WebSocket-like class clients connect with. */
export function registerMemoryTransport(
  app: FastifyInstance,
  options: { compression?: boolean } = {},
): typeof MemoryWebSocket {
  // Compressed frames (the 0x80 flag) are a rule of @trivium/frame-session: this carrier gets them as is.
  const server = new FrameServer(
    app,
    'websocket',
    resolveFrameSessionOptions(
      'memory',
      {
        clientStreamWindowBytes: CLIENT_STREAM_WINDOW_BYTES,
        ...(options.compression ? { compression: { threshold: 0 } } : {}),
      },
      10_000,
    ),
  )
  app.addHook('preClose', () => server.shutdownAll())
  app.addHook('onReady', async () => server.start(1000))
  let counter = 0
  return class extends MemoryWebSocket {
    constructor(url: string) {
      super(url, (socket, query) => {
        const carrier = new MemoryCarrier(socket)
        const format = app.trivium.formats.get(String(query.format)) ?? jsonFormat
        const id = `m${++counter}`
        carrier.session = new FrameSession(carrier, server, {
          id,
          clientIp: '127.0.0.1',
          log: app.log.child({ connection: id }),
          format,
          query,
          credential: () => websocketCredential({}, query),
          // As @trivium/websocket: with `metadata=1` (the client's) a metadata block leads every REQUEST.
          ...(query.metadata === '1'
            ? {
                splitRequest: (payload: Uint8Array) => {
                  const { metadata, rest } = decodeMetadata(payload)
                  return { metadata, formatName: undefined, payload: rest }
                },
              }
            : {}),
        })
        server.add(carrier.session)
        return carrier
      })
    }
  }
}

/** The client end: the part of the WHATWG WebSocket that @trivium/client uses. */
export class MemoryWebSocket {
  binaryType = 'arraybuffer'
  readyState = 0
  onopen: ((ev: unknown) => void) | null = null
  onmessage: ((ev: { data: unknown }) => void) | null = null
  onclose: ((ev: { code: number; reason: string }) => void) | null = null
  onerror: ((ev: { message?: string }) => void) | null = null
  #carrier: MemoryCarrier | undefined

  constructor(
    url: string,
    connect: (socket: MemoryWebSocket, query: Record<string, string>) => MemoryCarrier,
  ) {
    const query = Object.fromEntries(new URL(url).searchParams)
    setImmediate(() => {
      this.#carrier = connect(this, query)
      this.readyState = 1
      this.onopen?.({})
    })
  }
  send(data: Uint8Array): void {
    const carrier = this.#carrier
    setImmediate(() => carrier?.receive(data))
  }
  close(code = 1000, reason = ''): void {
    if (this.readyState >= 2) return
    this.readyState = 3
    this.#carrier?.session.connectionClosed()
    setImmediate(() => this.onclose?.({ code, reason }))
  }
  deliver(bytes: Uint8Array): void {
    if (this.readyState === 1) this.onmessage?.({ data: bytes.slice().buffer })
  }
  closedByServer(reason: string): void {
    if (this.readyState >= 2) return
    this.readyState = 3
    this.#carrier?.session.connectionClosed()
    this.onclose?.({ code: 1000, reason })
  }
}
