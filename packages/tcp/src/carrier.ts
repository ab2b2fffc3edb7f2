// One TCP connection as a frame carrier: reassembles length-prefixed frames, splits a REQUEST's
// metadata from its model, batches every frame of one event-loop turn into one socket write, and
// times out stalled partial frames. A malformed frame ends the connection (the stream is out of sync).
import type { Socket } from 'node:net'
import { ValidationException } from '@trivium/core'
import {
  type CloseKind,
  type FrameCarrier,
  type FrameSession,
  isSharedBody,
  type RequestParts,
  SharedFrames,
  waitForDrain,
} from '@trivium/frame-session'
import {
  encodeTcpFrame,
  type Frame,
  FrameError,
  MALFORMED_FRAME_MESSAGE,
  TcpFrameReader,
} from '@trivium/wire'
import { MetadataReader } from './metadata-reader.js'

/**
 * Whole frames of shared bodies (frame-session's `SharedFrames`: an event fanned out to N subscribers
 * is one frame per stream id for all of them): a turn whose only frame is one is written without a copy.
 */
const sharedFrames = new SharedFrames((type: number, requestId: number, body: Uint8Array | string) => {
  const bytes = body as Uint8Array // only shared bodies come here, and they are bytes
  const frame = Buffer.allocUnsafe(9 + bytes.length)
  writeHeader(frame, 0, 5 + bytes.length, requestId, type)
  frame.set(bytes, 9)
  return frame
})

/**
 * A frame's 9 header bytes (length, request id, type) by plain stores: two `writeUInt32BE` calls, with
 * their argument checks, cost ~200 instructions per frame (bench/README.md "Transport cost per message").
 */
function writeHeader(out: Uint8Array, at: number, length: number, requestId: number, type: number): void {
  out[at] = length >>> 24
  out[at + 1] = length >>> 16
  out[at + 2] = length >>> 8
  out[at + 3] = length
  out[at + 4] = requestId >>> 24
  out[at + 5] = requestId >>> 16
  out[at + 6] = requestId >>> 8
  out[at + 7] = requestId
  out[at + 8] = type
}

/**
 * The carriers with frames waiting this turn, written together by one `setImmediate` (an event fanned
 * out to thousands of connections schedules one callback, not one per connection; as the WebSocket
 * carrier's uncork).
 */
let pendingThisTurn: TcpCarrier[] = []

function flushAll(): void {
  const pending = pendingThisTurn
  pendingThisTurn = []
  for (let i = 0; i < pending.length; i++) (pending[i] as TcpCarrier).flush()
}

/** Each socket's carrier, for the listeners every socket shares (`this` is the socket). */
const carriers = new WeakMap<Socket, TcpCarrier>()

/**
 * A socket's error (logged at debug; 'close' follows) and its close. Shared by every connection: two
 * closures per connection cost ~150 bytes each idle session holds (bench/density).
 */
function onSocketError(this: Socket, err: Error): void {
  carriers.get(this)?.session.log.debug({ reason: err.message }, 'tcp socket error')
}
function onSocketClose(this: Socket): void {
  carriers.get(this)?.session.connectionClosed()
}

export class TcpCarrier implements FrameCarrier {
  session!: FrameSession
  readonly #socket: Socket
  readonly #reader: TcpFrameReader
  readonly maxFrameBytes: number
  readonly #partialFrameTimeoutMs: number
  readonly #metadata = new MetadataReader()
  /** A REQUEST was split since the last tick: the metadata memo is in use (kept for the next tick). */
  #metadataUsed = false
  #partialSince = 0
  /** The frames of this turn, written one after another into one buffer (sent, then dropped, at flush). */
  #out: Buffer | undefined
  #outLength = 0
  /** The turn's one frame while it is a shared one (no copy); a second frame moves it into `#out`. */
  #shared: Buffer | undefined
  #flushScheduled = false

  constructor(socket: Socket, options: { maxFrameBytes: number; partialFrameTimeoutMs: number }) {
    this.#socket = socket
    this.#reader = new TcpFrameReader({ maxFrameBytes: options.maxFrameBytes })
    this.maxFrameBytes = options.maxFrameBytes
    this.#partialFrameTimeoutMs = options.partialFrameTimeoutMs
  }

  /** Starts reading: call once the session exists. */
  attach(session: FrameSession): void {
    this.session = session
    const socket = this.#socket
    socket.setNoDelay(true)
    carriers.set(socket, this)
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('error', onSocketError)
    socket.on('close', onSocketClose)
  }

  /** A REQUEST payload is `metadata | model` (PROTOCOL.md "TCP"). */
  splitRequest(payload: Uint8Array): RequestParts {
    this.#metadataUsed = true
    return this.#metadata.read(payload)
  }

  get open(): boolean {
    return !this.#socket.destroyed && this.#socket.writable
  }

  get backlog(): number {
    return this.#outLength + (this.#shared?.length ?? 0) + this.#socket.writableLength
  }

  sendBody(type: number, requestId: number, body: Uint8Array | string): void {
    if (this.#socket.destroyed) return
    if (isSharedBody(body) && this.#outLength === 0 && this.#shared === undefined) {
      this.#shared = sharedFrames.frame(type, requestId, body)
      this.#scheduleFlush()
      return
    }
    // A string is written straight into the turn's buffer, with room for its longest UTF-8 form (short
    // strings) or its exact one (long strings, so that the room is not three times the text).
    const text = typeof body === 'string'
    const room = text ? (body.length <= 4096 ? body.length * 3 : Buffer.byteLength(body)) : body.length
    const at = this.#reserve(9 + room)
    const out = this.#out as Buffer
    let size: number
    if (text) size = out.write(body, at + 9, room, 'utf8')
    else {
      out.set(body, at + 9)
      size = body.length
    }
    writeHeader(out, at, 5 + size, requestId, type)
    this.#outLength = at + 9 + size
  }

  sendFrame(frame: Frame): void {
    if (this.#socket.destroyed) return
    const bytes = encodeTcpFrame(frame)
    const at = this.#reserve(bytes.length)
    ;(this.#out as Buffer).set(bytes, at)
    this.#outLength = at + bytes.length
  }

  drain(signal: AbortSignal): Promise<void> {
    this.flush()
    return waitForDrain(this.#socket, signal)
  }

  /** Every kind ends the same way on TCP: what is queued goes out, then FIN (destroyed after 1 s). */
  close(_kind: CloseKind, _message: string): void {
    this.flush()
    this.#socket.end()
    setTimeout(() => this.#socket.destroy(), 1000).unref()
  }

  tick(now: number): void {
    // A connection with no REQUEST for a whole tick interval forgets its metadata memo: an idle session
    // holds no copy of its token (bench/density); a busy one keeps reusing it.
    if (this.#metadataUsed) this.#metadataUsed = false
    else this.#metadata.forget()
    if (this.#reader.bufferedBytes > 0 && now - this.#partialSince >= this.#partialFrameTimeoutMs) {
      this.session.fail(new ValidationException('Incomplete frame timed out'))
    }
  }

  /**
   * Makes room for `bytes` more at the end of the turn's buffer (a new buffer for the first frame of a
   * turn, a bigger copy when full) and schedules the flush; returns where they go.
   */
  #reserve(bytes: number): number {
    const shared = this.#shared
    if (shared !== undefined) {
      this.#shared = undefined
      const first = this.#reserve(shared.length)
      ;(this.#out as Buffer).set(shared, first)
      this.#outLength = first + shared.length
    }
    const at = this.#outLength
    const out = this.#out
    if (out === undefined) {
      // Small first buffers come from Node's shared pool (cheap); a turn that needs more grows it.
      this.#out = Buffer.allocUnsafe(Math.max(bytes, 2048))
    } else if (at + bytes > out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(at + bytes, out.length * 2))
      out.copy(bigger, 0, 0, at)
      this.#out = bigger
    }
    this.#scheduleFlush()
    return at
  }

  #scheduleFlush(): void {
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      if (pendingThisTurn.push(this) === 1) setImmediate(flushAll)
    }
  }

  /** Writes the turn's frames (at the end of the turn, or before a drain or a close). */
  flush(): void {
    this.#flushScheduled = false
    const shared = this.#shared
    if (shared !== undefined) {
      this.#shared = undefined
      if (!this.#socket.destroyed) this.#socket.write(shared)
      return
    }
    const out = this.#out
    const length = this.#outLength
    this.#out = undefined
    this.#outLength = 0
    if (out === undefined || length === 0 || this.#socket.destroyed) return
    // The socket keeps the bytes until they are sent: the buffer is never written again.
    this.#socket.write(out.subarray(0, length))
  }

  #onData(chunk: Buffer): void {
    const session = this.session
    session.touch()
    if (session.closed) return
    const wasPartial = this.#reader.bufferedBytes > 0
    let frames: Frame[]
    try {
      frames = this.#reader.push(chunk)
    } catch (err) {
      if (!(err instanceof FrameError)) {
        session.log.error({ err }, 'tcp frame reader failed')
        session.fail(new ValidationException(MALFORMED_FRAME_MESSAGE), 'internal')
        return
      }
      session.rejectFrame(err, true)
      return
    }
    if (this.#reader.bufferedBytes === 0) this.#partialSince = 0
    else if (!wasPartial || frames.length > 0) this.#partialSince = Date.now()
    for (const frame of frames) {
      if (session.closed) return
      session.receive(frame)
    }
  }
}
