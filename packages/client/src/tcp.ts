// The TCP transport (Node only): length-prefixed frames over net.Socket (or TLS), reassembled by
// @trivium/wire's TcpFrameReader, the same code the server uses. Token and format travel in each
// REQUEST's metadata (`auth_token`, `format`), PROTOCOL.md "TCP".
import { connect as netConnect, type Socket } from 'node:net'
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls'
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import {
  CREDENTIAL_METADATA_KEY,
  encodeMetadata,
  encodeTcpFrame,
  encodeTcpFrameBody,
  FORMAT_METADATA_KEY,
  type Frame,
  IDEMPOTENCY_KEY_METADATA,
  TcpFrameReader,
  TIMEOUT_METADATA_KEY,
  TRACEPARENT_METADATA_KEY,
} from '@trivium/wire'
import { checkNonNegative, hasBinary, optionError } from './base.js'
import { NetworkException } from './errors.js'
import { type FrameCodec, FrameCompression, type FrameCompressionOptions } from './frame-compression.js'
import { FrameClient, type FrameClientOptions, type FrameLink, type LinkHandlers } from './frames.js'
import type { EndpointSpec, PayloadFormat } from './types.js'
import { DEFAULT_CLIENT_MAX_FRAME_BYTES } from './websocket.js'

/** Raw DEFLATE with node:zlib, synchronous, inflation bounded by `maxOutputLength`. */
export const zlibFrameCodec: FrameCodec = {
  deflate: (body) => deflateRawSync(body),
  inflate: (body, maxBytes) => inflateRawSync(body, { maxOutputLength: Math.max(1, maxBytes) }),
}

export interface TcpClientOptions extends FrameClientOptions {
  transport: 'tcp'
  host?: string
  port: number
  /** Give up opening a connection after this many ms (default 10000). */
  connectTimeoutMs?: number
  /** TCP keep-alive on the socket (default true). */
  keepAlive?: boolean
  /** Delay before the first keep-alive probe, in ms (default 30000). */
  keepAliveIntervalMs?: number
  /** Connect with TLS: `true`, or node:tls connection options (ca, servername, …). Default false. */
  tls?: boolean | ConnectionOptions
  /** Largest frame accepted from the server, in bytes (default 16 MiB); a larger one drops the connection. */
  maxFrameBytes?: number
  /**
   * Compressed frames (PROTOCOL.md "Compression"): offered on every connection by default (`true`);
   * `{ threshold }` sets the smallest body sent compressed (default 1024 bytes); `false` never offers.
   */
  compression?: boolean | { threshold?: number }
}

export class TcpClient extends FrameClient {
  readonly transport = 'tcp' as const
  protected readonly target: string
  private readonly host: string
  private readonly port: number
  private readonly connectTimeoutMs: number
  private readonly keepAlive: boolean
  private readonly keepAliveIntervalMs: number
  private readonly tls: ConnectionOptions | undefined
  private readonly maxFrameBytes: number
  private readonly compression: FrameCompressionOptions | undefined

  constructor(options: TcpClientOptions) {
    super(options)
    this.host = options.host ?? '127.0.0.1'
    if (typeof this.host !== 'string' || this.host.length === 0)
      throw optionError('host must be a non-empty string')
    if (!Number.isInteger(options.port) || options.port <= 0 || options.port > 65535) {
      throw optionError('port must be an integer from 1 to 65535')
    }
    this.port = options.port
    this.target = `${this.host}:${this.port}`
    this.connectTimeoutMs = checkNonNegative('connectTimeoutMs', options.connectTimeoutMs, 10_000)
    this.keepAlive = options.keepAlive ?? true
    if (typeof this.keepAlive !== 'boolean') throw optionError('keepAlive must be a boolean')
    this.keepAliveIntervalMs = checkNonNegative('keepAliveIntervalMs', options.keepAliveIntervalMs, 30_000)
    this.tls = options.tls === true ? {} : options.tls || undefined
    this.maxFrameBytes = checkNonNegative(
      'maxFrameBytes',
      options.maxFrameBytes,
      DEFAULT_CLIENT_MAX_FRAME_BYTES,
    )
    const compression = options.compression ?? true
    if (
      compression !== false &&
      compression !== true &&
      (typeof compression !== 'object' || compression === null)
    )
      throw optionError('compression must be true, false or { threshold: <bytes> }')
    this.compression =
      compression === false
        ? undefined
        : { codec: zlibFrameCodec, ...(compression === true ? {} : { threshold: compression.threshold }) }
    FrameCompression.check('compression', this.compression)
    if (options.eager) void this.connect().catch(() => {})
  }

  /**
   * Per call: binary when the request and response models have a binary form (and `format` is not
   * 'json'); a binary call to a JSON-only response model is the server's 406.
   */
  protected formatFor(spec: EndpointSpec): PayloadFormat {
    if (this.format === 'json') return 'json'
    return hasBinary(spec) ? 'binary' : 'json'
  }

  protected async requestPayload(
    spec: EndpointSpec,
    request: unknown,
    format: PayloadFormat,
    idempotencyKey?: string,
    timeout?: string,
  ): Promise<Uint8Array> {
    const metadata: Record<string, string> = { [FORMAT_METADATA_KEY]: format }
    if (idempotencyKey !== undefined) metadata[IDEMPOTENCY_KEY_METADATA] = idempotencyKey
    if (timeout !== undefined) metadata[TIMEOUT_METADATA_KEY] = timeout
    const token = await this.currentToken()
    if (token) metadata[CREDENTIAL_METADATA_KEY] = token
    const traceparent = this.currentTraceparent()
    if (traceparent) metadata[TRACEPARENT_METADATA_KEY] = traceparent
    const meta = encodeMetadata(metadata)
    const body = await this.encodeModel(spec.request, request, format, spec.name)
    const out = new Uint8Array(meta.length + body.length)
    out.set(meta)
    out.set(body, meta.length)
    return out
  }

  /** A socket connecting to the server, over TLS when configured. */
  private connectSocket(): Socket {
    return this.tls
      ? tlsConnect({
          ...this.tls,
          host: this.host,
          port: this.port,
          servername: this.tls.servername ?? this.host,
        })
      : netConnect({ host: this.host, port: this.port })
  }

  protected openLink(handlers: LinkHandlers): Promise<FrameLink> {
    return new Promise((resolve, reject) => {
      const socket = this.connectSocket()
      const reader = new TcpFrameReader({ maxFrameBytes: this.maxFrameBytes })
      const compression = this.compression && new FrameCompression(this.compression, this.maxFrameBytes)
      let opened = false
      let closed = false
      let closingReason: string | undefined
      let lastError: Error | undefined
      let onClosed: () => void = () => {}
      const closedPromise = new Promise<void>((r) => {
        onClosed = r
      })
      const timer =
        this.connectTimeoutMs > 0
          ? setTimeout(() => {
              if (opened) return
              lastError = new Error(`timed out after ${this.connectTimeoutMs} ms`)
              socket.destroy()
            }, this.connectTimeoutMs)
          : undefined
      const write = frameWriter(socket, compression)
      const link: FrameLink = {
        send(frame: Frame) {
          if (closed || socket.destroyed) throw new Error('the socket is closed')
          write(frame)
        },
        async close(reason: string) {
          if (closed) return
          closingReason ??= reason
          socket.end()
          const force = setTimeout(() => socket.destroy(), 1000)
          await closedPromise
          clearTimeout(force)
        },
      }
      socket.once(this.tls ? 'secureConnect' : 'connect', () => {
        opened = true
        if (timer) clearTimeout(timer)
        socket.setNoDelay(true)
        socket.setKeepAlive(this.keepAlive, this.keepAliveIntervalMs)
        // The offer goes first; calls do not wait for the answer (frames before it are plain).
        if (compression) socket.write(encodeTcpFrameBody(...compression.offer))
        resolve(link)
      })
      socket.on('data', (chunk: Buffer) => {
        if (closed) return
        let frames: Frame[]
        try {
          frames = readFrames(reader, compression, chunk)
        } catch (err) {
          handlers.protocolError(err as Error)
          closingReason ??= 'protocol error'
          socket.destroy()
          return
        }
        for (const frame of frames) handlers.frame(frame)
      })
      socket.on('error', (err) => {
        lastError = err
      })
      socket.on('close', () => {
        if (timer) clearTimeout(timer)
        closed = true
        onClosed()
        if (!opened) {
          const detail =
            (lastError as NodeJS.ErrnoException | undefined)?.code ?? lastError?.message ?? 'closed'
          reject(new NetworkException(`Cannot connect to ${this.target}: ${detail}`, { cause: lastError }))
          return
        }
        handlers.closed(
          closingReason ?? (lastError ? `socket error: ${lastError.message}` : 'closed by the server'),
        )
      })
    })
  }
}

/**
 * Writes frames on `socket`, compressed when negotiated. Frames written in one turn leave in one write
 * (as the server batches): a client stream's items sent back to back within its credit cost one
 * syscall, not one each.
 */
function frameWriter(socket: Socket, compression: FrameCompression | undefined): (frame: Frame) => void {
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  return (frame) => {
    if (!corked) {
      corked = true
      socket.cork()
      process.nextTick(uncork)
    }
    if (compression === undefined) socket.write(encodeTcpFrame(frame))
    else {
      const [type, body] = compression.outgoing(frame)
      socket.write(encodeTcpFrameBody(type, frame.requestId, body))
    }
  }
}

/** The frames a chunk completes, inflated when compression was negotiated (throws on a protocol error). */
function readFrames(
  reader: TcpFrameReader,
  compression: FrameCompression | undefined,
  chunk: Buffer,
): Frame[] {
  const frames = reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
  if (compression) return frames.map((f) => compression.incoming(f)).filter((f) => f !== undefined)
  if (frames.some((f) => f.compressed)) throw new Error('a compressed frame, not negotiated')
  return frames
}
