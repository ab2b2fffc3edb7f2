// The WebSocket transport: one binary WebSocket message per frame (PROTOCOL.md "WebSocket"). Uses the
// global WebSocket (browsers, Node >= 22) or the constructor passed as `WebSocket` (the Node entry passes
// the `ws` package's). The token and the payload format travel in the upgrade URL's query.
import {
  decodeWsFrame,
  encodeMetadata,
  encodeWsFrame,
  encodeWsFrameBody,
  type Frame,
  IDEMPOTENCY_KEY_METADATA,
  TIMEOUT_METADATA_KEY,
} from '@trivium/wire'
import { checkNonNegative, hasBinary, optionError } from './base.js'
import { NetworkException } from './errors.js'
import { FrameCompression, type FrameCompressionOptions } from './frame-compression.js'
import { FrameClient, type FrameClientOptions, type FrameLink, type LinkHandlers } from './frames.js'
import type { EndpointSpec, PayloadFormat } from './types.js'

const EMPTY_METADATA = encodeMetadata({})

/** The part of the WHATWG WebSocket the client uses (the `ws` package implements it too). */
export interface WebSocketLike {
  binaryType: string
  readonly readyState: number
  send(data: Uint8Array): void
  close(code?: number, reason?: string): void
  onopen: ((ev: unknown) => void) | null
  onmessage: ((ev: { data: unknown }) => void) | null
  onclose: ((ev: { code: number; reason: string }) => void) | null
  onerror: ((ev: { message?: string; error?: unknown }) => void) | null
}

export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike

/** Largest frame accepted from the server by default (16 MiB). */
export const DEFAULT_CLIENT_MAX_FRAME_BYTES = 16 * 1024 * 1024

export interface WebSocketClientOptions extends FrameClientOptions {
  transport: 'websocket'
  /** `ws://` or `wss://` URL of the server's WebSocket route, e.g. `ws://localhost:3000/ws`. */
  url: string
  /** WebSocket constructor (default: globalThis.WebSocket; the Node entry defaults to the `ws` package). */
  WebSocket?: WebSocketConstructor
  /** Give up opening a connection after this many ms (default 10000). */
  connectTimeoutMs?: number
  /** Largest frame accepted from the server, in bytes (default 16 MiB); a larger one drops the connection. */
  maxFrameBytes?: number
  /**
   * The 0x80 frame flag (PROTOCOL.md "Compression") for carriers without permessage-deflate, such as an
   * in-memory one: `{ codec }` (`zlibFrameCodec` from `@trivium/client/node`). Not needed on a real
   * WebSocket: `ws` and browsers negotiate permessage-deflate themselves.
   */
  frameCompression?: FrameCompressionOptions
}

const OPEN = 1

export class WebSocketClient extends FrameClient {
  readonly transport = 'websocket' as const
  protected readonly target: string
  private readonly url: string
  private readonly Ctor: WebSocketConstructor
  private readonly connectTimeoutMs: number
  private readonly maxFrameBytes: number
  private readonly connFormat: PayloadFormat
  private readonly frameCompression: FrameCompressionOptions | undefined

  constructor(options: WebSocketClientOptions) {
    super(options)
    if (typeof options.url !== 'string' || !/^wss?:\/\//i.test(options.url)) {
      throw optionError('url must be a ws:// or wss:// URL')
    }
    this.url = options.url
    this.target = options.url
    const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket
    if (typeof Ctor !== 'function') {
      throw optionError(
        'no WebSocket available: pass the WebSocket option (in Node, use @trivium/client/node)',
      )
    }
    this.Ctor = Ctor
    this.connectTimeoutMs = checkNonNegative('connectTimeoutMs', options.connectTimeoutMs, 10_000)
    this.maxFrameBytes = checkNonNegative(
      'maxFrameBytes',
      options.maxFrameBytes,
      DEFAULT_CLIENT_MAX_FRAME_BYTES,
    )
    FrameCompression.check('frameCompression', options.frameCompression)
    this.frameCompression = options.frameCompression
    // One format per connection: binary unless asked otherwise or some model has no binary form (a binary
    // call to a JSON-only request model is 415, to a JSON-only response model 406).
    const specs = [...new Set(this.endpoints.values())]
    this.connFormat = options.format ?? (specs.every(hasBinary) ? 'binary' : 'json')
    if (options.eager) void this.connect().catch(() => {})
  }

  protected formatFor(_spec: EndpointSpec): PayloadFormat {
    return this.connFormat
  }

  /** The connection is opened with `metadata=1`: a metadata block (empty unless a key is sent), then the model. */
  protected async requestPayload(
    spec: EndpointSpec,
    request: unknown,
    format: PayloadFormat,
    idempotencyKey?: string,
    timeout?: string,
  ): Promise<Uint8Array> {
    let meta = EMPTY_METADATA
    if (idempotencyKey !== undefined || timeout !== undefined) {
      const entries: Record<string, string> = {}
      if (idempotencyKey !== undefined) entries[IDEMPOTENCY_KEY_METADATA] = idempotencyKey
      if (timeout !== undefined) entries[TIMEOUT_METADATA_KEY] = timeout
      meta = encodeMetadata(entries)
    }
    const body = await this.encodeModel(spec.request, request, format, spec.name)
    const out = new Uint8Array(meta.length + body.length)
    out.set(meta)
    out.set(body, meta.length)
    return out
  }

  protected override async tokenRefreshed(): Promise<void> {
    // The token is fixed per connection: new calls (and the retry) go to a connection with the new one.
    this.drainCurrent()
  }

  /** A WebSocket connecting to the server, with the connection's format, token and traceparent. */
  private async connectSocket(): Promise<WebSocketLike> {
    const url = new URL(this.url)
    url.searchParams.set('format', this.connFormat)
    url.searchParams.set('metadata', '1')
    const token = await this.currentToken()
    if (token) url.searchParams.set('token', token)
    const traceparent = this.currentTraceparent()
    if (traceparent) url.searchParams.set('traceparent', traceparent)
    let ws: WebSocketLike
    try {
      ws = new this.Ctor(url.toString())
    } catch (err) {
      throw new NetworkException(`Cannot connect to ${this.target}: ${(err as Error).message}`, {
        cause: err,
      })
    }
    ws.binaryType = 'arraybuffer'
    return ws
  }

  private cannotConnect(detail: string): NetworkException {
    return new NetworkException(`Cannot connect to ${this.target}: ${detail}`)
  }

  protected async openLink(handlers: LinkHandlers): Promise<FrameLink> {
    const ws = await this.connectSocket()
    const maxFrameBytes = this.maxFrameBytes
    const compression = this.frameCompression && new FrameCompression(this.frameCompression, maxFrameBytes)
    let closed = false
    let closingReason: string | undefined
    let onClosed: (() => void) | undefined
    const closedPromise = new Promise<void>((resolve) => {
      onClosed = resolve
    })
    const finish = (reason: string) => {
      if (closed) return
      closed = true
      onClosed?.()
      handlers.closed(reason)
    }
    const link: FrameLink = {
      send(frame: Frame) {
        if (closed || ws.readyState !== OPEN) throw new Error('the WebSocket is not open')
        sendFrame(ws, compression, frame)
      },
      async close(reason: string) {
        if (!closed) {
          closingReason ??= reason
          await closeSocket(ws, reason, closedPromise, finish)
        }
      },
    }
    await new Promise<void>((resolve, reject) => {
      let opened = false
      let lastError = ''
      const timer =
        this.connectTimeoutMs > 0
          ? setTimeout(() => {
              if (opened) return
              closed = true
              try {
                ws.close()
              } catch {}
              terminate(ws)
              reject(this.cannotConnect(`timed out after ${this.connectTimeoutMs} ms`))
            }, this.connectTimeoutMs)
          : undefined
      ws.onopen = () => {
        opened = true
        if (timer) clearTimeout(timer)
        if (compression) ws.send(encodeWsFrameBody(...compression.offer))
        resolve()
      }
      ws.onerror = (ev) => {
        lastError = ev?.message ?? (ev?.error as Error | undefined)?.message ?? 'WebSocket error'
      }
      ws.onclose = (ev) => {
        if (timer) clearTimeout(timer)
        if (!opened) {
          closed = true
          onClosed?.()
          reject(this.cannotConnect(lastError || `closed (code ${ev.code})`))
          return
        }
        finish(closingReason ?? `closed by the server (code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''})`)
      }
      ws.onmessage = (ev) => {
        if (closed) return
        let frame: Frame | undefined
        try {
          frame = decodeMessage(ev.data, maxFrameBytes, compression)
          if (frame === undefined) return
        } catch (err) {
          handlers.protocolError(err as Error)
          void link.close('protocol error')
          return
        }
        handlers.frame(frame)
      }
    })
    return link
  }
}

/** Ends the connection at once (`terminate` is ws's; a browser WebSocket has none). */
function terminate(ws: WebSocketLike): void {
  ;(ws as { terminate?: () => void }).terminate?.()
}

/** Sends one frame, compressed when negotiated. */
function sendFrame(ws: WebSocketLike, compression: FrameCompression | undefined, frame: Frame): void {
  if (compression === undefined) ws.send(encodeWsFrame(frame))
  else {
    const [type, body] = compression.outgoing(frame)
    ws.send(encodeWsFrameBody(type, frame.requestId, body))
  }
}

/** Closes the WebSocket; a server that never answers the close handshake must not hold close() up. */
async function closeSocket(
  ws: WebSocketLike,
  reason: string,
  closedPromise: Promise<void>,
  finish: (reason: string) => void,
): Promise<void> {
  try {
    ws.close(1000, reason.slice(0, 100))
  } catch {
    // already closing
  }
  const timer = setTimeout(() => {
    terminate(ws)
    finish(reason)
  }, 1000)
  await closedPromise
  clearTimeout(timer)
}

/**
 * The frame a message carries, inflated when compression was negotiated (undefined when it carries
 * none, such as a compression answer); throws on a protocol error.
 */
function decodeMessage(
  data: unknown,
  maxFrameBytes: number,
  compression: FrameCompression | undefined,
): Frame | undefined {
  let bytes: Uint8Array
  if (data instanceof ArrayBuffer) bytes = new Uint8Array(data)
  else if (data instanceof Uint8Array) bytes = data
  else throw new Error('text message on a binary protocol')
  const frame = decodeWsFrame(bytes, { maxFrameBytes })
  if (compression) return compression.incoming(frame)
  if (frame.compressed) throw new Error('a compressed frame, not negotiated')
  return frame
}
