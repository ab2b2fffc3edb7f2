// One WebSocket connection as a frame carrier: one binary message is one frame. Decodes messages for
// the session, corks the socket so every frame of one event-loop turn leaves in one write, keeps the
// connection alive with protocol pings, and maps the session's closes to WebSocket close codes.
// Without a negotiated extension, a reply is framed here (ws-frame.ts: the bytes ws would write) and
// written to the socket as one buffer; with one (permessage-deflate), it goes through `ws.send`.
import { type CloseKind, type FrameCarrier, type FrameSession, waitForDrain } from '@trivium/frame-session'
import { decodeWsFrame, encodeWsFrame, type Frame } from '@trivium/wire'
import type { WebSocket } from 'ws'
import { CloseCode } from './close-codes.js'
import { writeWsBinaryHeader, wsHeaderSize } from './ws-frame.js'

const OPEN = 1
const noop = (): void => {}
const BINARY = { binary: true }

const CLOSE_CODES: Record<CloseKind, number> = {
  shutdown: CloseCode.GOING_AWAY,
  idle: CloseCode.IDLE_TIMEOUT,
  session: CloseCode.SESSION_REVOKED,
  slow_consumer: CloseCode.SLOW_CONSUMER,
  protocol: CloseCode.PROTOCOL_ERROR,
  internal: CloseCode.INTERNAL_ERROR,
}

/** The `net.Socket` under a `ws` WebSocket (ws keeps it as `_socket`): corking and drain. */
interface RawSocket {
  cork(): void
  uncork(): void
  write(chunk: Uint8Array): boolean
  readonly writable: boolean
  readonly writableNeedDrain: boolean
  readonly destroyed: boolean
  on(event: string, fn: () => void): unknown
  off(event: string, fn: () => void): unknown
}

export class WebSocketCarrier implements FrameCarrier {
  session!: FrameSession
  readonly #socket: WebSocket
  readonly #raw: RawSocket | undefined
  /** Frames are written by the carrier (the raw socket exists, the server side, no extension). */
  readonly #direct: boolean
  /** decodeWsFrame's options, made once. */
  readonly #decodeOptions: { maxFrameBytes: number }
  readonly #pingIntervalMs: number
  #corked = false
  #alive = true
  #lastPingAt = Date.now()
  readonly #uncork = (): void => {
    this.#corked = false
    this.#raw?.uncork()
  }

  constructor(socket: WebSocket, options: { maxPayload: number; pingIntervalMs: number }) {
    this.#socket = socket
    this.#decodeOptions = { maxFrameBytes: options.maxPayload }
    this.#pingIntervalMs = options.pingIntervalMs
    const raw = (socket as unknown as { _socket?: Partial<RawSocket> })._socket
    this.#raw =
      typeof raw?.cork === 'function' && typeof raw.write === 'function' ? (raw as RawSocket) : undefined
    // Extensions are negotiated in the upgrade, before the carrier exists: this holds for the connection.
    this.#direct =
      this.#raw !== undefined &&
      socket.extensions === '' &&
      (socket as unknown as { _isServer?: boolean })._isServer === true
  }

  /** Starts reading: call once the session exists. */
  attach(session: FrameSession): void {
    this.session = session
    const socket = this.#socket
    socket.on('message', (data, isBinary) => this.#onMessage(data as Buffer, isBinary))
    socket.on('pong', () => {
      this.#alive = true
    })
    // A client's protocol violation is its own business: debug, never a stack at error level.
    socket.on('error', (err) => session.log.debug({ reason: err.message }, 'websocket error'))
    socket.on('close', () => session.connectionClosed())
  }

  get open(): boolean {
    return this.#socket.readyState === OPEN
  }

  get backlog(): number {
    return this.#socket.bufferedAmount
  }

  sendBody(type: number, requestId: number, body: Uint8Array | string): void {
    if (!this.open) return
    const size = 5 + (typeof body === 'string' ? Buffer.byteLength(body) : body.length)
    const head = this.#direct ? wsHeaderSize(size) : 0
    const bytes = Buffer.allocUnsafe(head + size)
    if (head > 0) writeWsBinaryHeader(bytes, size)
    bytes[head] = type
    bytes.writeUInt32BE(requestId, head + 1)
    if (typeof body === 'string') bytes.write(body, head + 5, 'utf8')
    else bytes.set(body, head + 5)
    if (this.#direct) this.#write(bytes)
    else this.#send(bytes)
  }

  sendFrame(frame: Frame): void {
    if (!this.open) return
    const message = encodeWsFrame(frame)
    if (!this.#direct) {
      this.#send(message)
      return
    }
    const bytes = Buffer.allocUnsafe(wsHeaderSize(message.length) + message.length)
    bytes.set(message, writeWsBinaryHeader(bytes, message.length))
    this.#write(bytes)
  }

  drain(signal: AbortSignal): Promise<void> {
    this.#uncork()
    return this.#raw ? waitForDrain(this.#raw as never, signal) : Promise.resolve()
  }

  close(kind: CloseKind, message: string): void {
    this.#uncork() // what was sent this turn goes before the close frame
    try {
      this.#socket.close(CLOSE_CODES[kind], message.slice(0, 120))
    } catch {
      this.#socket.terminate()
    }
  }

  /** Liveness: a client that did not answer the previous protocol ping is terminated. */
  tick(now: number): void {
    if (now - this.#lastPingAt < this.#pingIntervalMs) return
    if (!this.#alive) {
      this.session.log.debug('no pong: terminating')
      this.#socket.terminate()
      this.session.connectionClosed()
      return
    }
    this.#alive = false
    this.#lastPingAt = now
    try {
      this.#socket.ping()
    } catch {
      /* closing */
    }
  }

  #send(bytes: Uint8Array): void {
    if (!this.#corked && this.#raw) {
      this.#corked = true
      this.#raw.cork()
      setImmediate(this.#uncork)
    }
    this.#socket.send(bytes, BINARY, noop)
  }

  /**
   * A whole WebSocket frame (header included) straight to the corked socket. Written at once, not
   * queued: frames ws writes itself (pong, close) stay in call order with ours, as with `ws.send`.
   */
  #write(bytes: Uint8Array): void {
    const raw = this.#raw as RawSocket
    if (!raw.writable) return
    if (!this.#corked) {
      this.#corked = true
      raw.cork()
      setImmediate(this.#uncork)
    }
    raw.write(bytes)
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    const session = this.session
    session.touch()
    this.#alive = true
    if (session.closed) return
    if (!isBinary) {
      this.#closeNow(CloseCode.UNSUPPORTED_DATA, 'Text frames are not supported')
      return
    }
    if (data.length < 5) {
      this.#closeNow(CloseCode.PROTOCOL_ERROR, 'Malformed frame')
      return
    }
    let frame: Frame
    try {
      frame = decodeWsFrame(data, this.#decodeOptions)
    } catch (err) {
      // Message boundaries keep the stream in sync: ERROR for the frame, the connection stays open.
      session.rejectFrame(err, false)
      return
    }
    session.receive(frame)
  }

  #closeNow(code: number, reason: string): void {
    this.session.connectionClosed()
    this.#uncork()
    this.#socket.close(code, reason)
  }
}
