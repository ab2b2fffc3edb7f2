// One TCP connection as a frame carrier: reassembles length-prefixed frames, splits a REQUEST's
// metadata from its model, batches every frame of one event-loop turn into one socket write, and
// times out stalled partial frames. A malformed frame ends the connection (the stream is out of sync).
import type { Socket } from 'node:net'
import { ValidationException } from '@trivium/core'
import {
  type CloseKind,
  type FrameCarrier,
  type FrameSession,
  type RequestParts,
  waitForDrain,
} from '@trivium/frame-session'
import { encodeTcpFrame, type Frame, FrameError, TcpFrameReader } from '@trivium/wire'
import { MetadataReader } from './metadata-reader.js'

export class TcpCarrier implements FrameCarrier {
  session!: FrameSession
  readonly #socket: Socket
  readonly #reader: TcpFrameReader
  readonly #partialFrameTimeoutMs: number
  readonly #metadata = new MetadataReader()
  #partialSince = 0
  #queue: Uint8Array[] = []
  #queuedBytes = 0
  #flushScheduled = false
  readonly #flush = (): void => this.#write()

  constructor(socket: Socket, options: { maxFrameBytes: number; partialFrameTimeoutMs: number }) {
    this.#socket = socket
    this.#reader = new TcpFrameReader({ maxFrameBytes: options.maxFrameBytes })
    this.#partialFrameTimeoutMs = options.partialFrameTimeoutMs
  }

  /** Starts reading: call once the session exists. */
  attach(session: FrameSession): void {
    this.session = session
    const socket = this.#socket
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('error', (err) => session.log.debug({ reason: err.message }, 'tcp socket error'))
    socket.on('close', () => session.connectionClosed())
  }

  /** A REQUEST payload is `metadata | model` (PROTOCOL.md "TCP"). */
  splitRequest(payload: Uint8Array): RequestParts {
    const { metadata, rest } = this.#metadata.read(payload)
    return { metadata, formatName: metadata.format, payload: rest }
  }

  get open(): boolean {
    return !this.#socket.destroyed && this.#socket.writable
  }

  get backlog(): number {
    return this.#queuedBytes + this.#socket.writableLength
  }

  sendBody(type: number, requestId: number, body: Uint8Array | string): void {
    if (this.#socket.destroyed) return
    const size = typeof body === 'string' ? Buffer.byteLength(body) : body.length
    const bytes = Buffer.allocUnsafe(9 + size)
    bytes.writeUInt32BE(5 + size, 0)
    bytes.writeUInt32BE(requestId, 4)
    bytes[8] = type
    if (typeof body === 'string') bytes.write(body, 9, 'utf8')
    else bytes.set(body, 9)
    this.#enqueue(bytes)
  }

  sendFrame(frame: Frame): void {
    if (!this.#socket.destroyed) this.#enqueue(encodeTcpFrame(frame))
  }

  drain(signal: AbortSignal): Promise<void> {
    this.#write()
    return waitForDrain(this.#socket, signal)
  }

  /** Every kind ends the same way on TCP: what is queued goes out, then FIN (destroyed after 1 s). */
  close(_kind: CloseKind, _message: string): void {
    this.#write()
    this.#socket.end()
    setTimeout(() => this.#socket.destroy(), 1000).unref()
  }

  tick(now: number): void {
    if (this.#reader.bufferedBytes > 0 && now - this.#partialSince >= this.#partialFrameTimeoutMs) {
      this.session.fail(new ValidationException('Incomplete frame timed out'))
    }
  }

  #enqueue(bytes: Uint8Array): void {
    this.#queue.push(bytes)
    this.#queuedBytes += bytes.length
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(this.#flush)
    }
  }

  #write(): void {
    this.#flushScheduled = false
    if (this.#queue.length === 0 || this.#socket.destroyed) {
      this.#queue = []
      this.#queuedBytes = 0
      return
    }
    const data =
      this.#queue.length === 1
        ? (this.#queue[0] as Uint8Array)
        : Buffer.concat(this.#queue, this.#queuedBytes)
    this.#queue = []
    this.#queuedBytes = 0
    this.#socket.write(data)
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
        session.fail(new ValidationException('Malformed frame'), 'internal')
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
