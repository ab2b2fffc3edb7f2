// One WebSocket connection as a frame carrier: one binary message is one frame. Decodes messages for
// the session, corks the socket so every frame of one event-loop turn leaves in one write, keeps the
// connection alive with protocol pings, and maps the session's closes to WebSocket close codes.
// Every message goes through `ws.send` (ws frames it, compresses it if permessage-deflate was
// negotiated, and keeps it in order with its own pong and close frames). The batching is Node's:
// the connection's socket (`request.raw.socket`, the one the upgrade handed to ws) is corked for the
// rest of the turn, so ws's writes of that turn leave as one `writev`.
import type { Duplex } from 'node:stream'
import {
  type CloseKind,
  type FrameCarrier,
  type FrameSession,
  SharedFrames,
  waitForDrain,
} from '@trivium/frame-session'
import { decodeWsFrame, encodeWsFrame, type Frame, MALFORMED_FRAME_MESSAGE } from '@trivium/wire'
import type { WebSocket } from 'ws'
import { CloseCode } from './close-codes.js'

const OPEN = 1

/**
 * The carriers corked this turn, uncorked together by one `setImmediate` (an event fanned out to
 * thousands of connections schedules one callback, not one per connection; and no carrier holds a
 * closure of its own for it: bench/density, bench/fanout).
 */
let corkedThisTurn: WebSocketCarrier[] = []

function uncorkAll(): void {
  const corked = corkedThisTurn
  corkedThisTurn = []
  for (let i = 0; i < corked.length; i++) (corked[i] as WebSocketCarrier).uncork()
}

/**
 * A message's bytes: the frame's type, its id, its body. An event fanned out to many subscribers is
 * one message per stream id for all of them (frame-session's `SharedFrames`), not a copy per session:
 * ws sends a server's Buffer as it is (its header apart, no mask), and the socket keeps it until written.
 */
const messages = new SharedFrames((type: number, requestId: number, body: Uint8Array | string): Buffer => {
  const size = 5 + (typeof body === 'string' ? Buffer.byteLength(body) : body.length)
  const bytes = Buffer.allocUnsafe(size)
  // The header by plain stores: `writeUInt32BE` checks its arguments first (~100 instructions a frame).
  bytes[0] = type
  bytes[1] = requestId >>> 24
  bytes[2] = requestId >>> 16
  bytes[3] = requestId >>> 8
  bytes[4] = requestId
  if (typeof body === 'string') bytes.write(body, 5, 'utf8')
  else bytes.set(body, 5)
  return bytes
})

const CLOSE_CODES: Record<CloseKind, number> = {
  shutdown: CloseCode.GOING_AWAY,
  idle: CloseCode.IDLE_TIMEOUT,
  session: CloseCode.SESSION_REVOKED,
  slow_consumer: CloseCode.SLOW_CONSUMER,
  protocol: CloseCode.PROTOCOL_ERROR,
  internal: CloseCode.INTERNAL_ERROR,
}

/** The carrier of each socket, for the listeners every socket shares (`this` is the socket). */
const carriers = new WeakMap<WebSocket, WebSocketCarrier>()

/** The listeners every socket shares (set in WebSocketCarrier's static block). */
let listeners: {
  message(this: WebSocket, data: unknown, isBinary: boolean): void
  pong(this: WebSocket): void
}

/**
 * The carrier's part of a socket's 'error': called by the transport's own listener, one per socket and
 * event (a second listener makes the emitter keep that event's listeners in an array: two per connection
 * were ~0.1 KiB of every idle session, bench/density). A client's protocol violation is its own business:
 * debug, never a stack at error level. Nothing for a socket without a carrier.
 */
export function carrierError(socket: WebSocket, err: Error): void {
  carriers.get(socket)?.session.log.debug({ reason: err.message }, 'websocket error')
}

/** The carrier's part of a socket's 'close' (see carrierError): the session ends. */
export function carrierClosed(socket: WebSocket): void {
  carriers.get(socket)?.session.connectionClosed()
}

/** decodeWsFrame's options by `maxPayload`: one object per server, not per connection. */
const decodeOptionsBySize = new Map<number, { maxFrameBytes: number }>()

function decodeOptionsFor(maxFrameBytes: number): { maxFrameBytes: number } {
  let options = decodeOptionsBySize.get(maxFrameBytes)
  if (options === undefined) {
    options = Object.freeze({ maxFrameBytes })
    decodeOptionsBySize.set(maxFrameBytes, options)
  }
  return options
}

export class WebSocketCarrier implements FrameCarrier {
  session!: FrameSession
  readonly #socket: WebSocket
  /** The upgraded connection's socket (Node's `request.socket`): corked per turn, drained. */
  readonly #raw: Duplex
  /** decodeWsFrame's options, made once. */
  readonly #decodeOptions: { maxFrameBytes: number }
  readonly #pingIntervalMs: number
  #corked = false
  #alive = true
  #lastPingAt = Date.now()

  constructor(socket: WebSocket, raw: Duplex, options: { maxPayload: number; pingIntervalMs: number }) {
    this.#socket = socket
    this.#raw = raw
    this.#decodeOptions = decodeOptionsFor(options.maxPayload)
    this.#pingIntervalMs = options.pingIntervalMs
  }

  /**
   * Starts reading: call once the session exists. The listeners are the same two functions for every
   * socket (`this` is the socket, its carrier found in `carriers`): four closures per connection were
   * ~0.25 KiB of every idle session (bench/density). The socket's 'error' and 'close' listeners are the
   * transport's, which call carrierError and carrierClosed.
   */
  attach(session: FrameSession): void {
    this.session = session
    const socket = this.#socket
    carriers.set(socket, this)
    socket.on('message', listeners.message)
    socket.on('pong', listeners.pong)
  }

  static {
    // Functions, not static methods (`this` is the socket), defined here to reach the carrier's fields.
    listeners = {
      message(this: WebSocket, data: unknown, isBinary: boolean): void {
        const carrier = carriers.get(this)
        if (carrier !== undefined) carrier.#onMessage(data as Buffer, isBinary)
      },
      pong(this: WebSocket): void {
        const carrier = carriers.get(this)
        if (carrier !== undefined) carrier.#alive = true
      },
    }
  }

  get open(): boolean {
    return this.#socket.readyState === OPEN
  }

  get backlog(): number {
    return this.#socket.bufferedAmount
  }

  sendBody(type: number, requestId: number, body: Uint8Array | string): void {
    if (!this.open) return
    this.#send(messages.frame(type, requestId, body))
  }

  sendFrame(frame: Frame): void {
    if (!this.open) return
    this.#send(encodeWsFrame(frame))
  }

  drain(signal: AbortSignal): Promise<void> {
    this.uncork()
    return waitForDrain(this.#raw, signal)
  }

  close(kind: CloseKind, message: string): void {
    this.uncork() // what was sent this turn goes before the close frame
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

  /** Sends what was written this turn (at the end of the turn, or before a drain or a close). */
  uncork(): void {
    if (!this.#corked) return
    this.#corked = false
    this.#raw.uncork()
  }

  #send(bytes: Uint8Array): void {
    if (!this.#corked) {
      this.#corked = true
      this.#raw.cork()
      if (corkedThisTurn.push(this) === 1) setImmediate(uncorkAll)
    }
    this.#socket.send(bytes) // a Buffer: binary, compressed only if permessage-deflate was negotiated
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
      this.#closeNow(CloseCode.PROTOCOL_ERROR, MALFORMED_FRAME_MESSAGE)
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
    this.uncork()
    this.#socket.close(code, reason)
  }
}
