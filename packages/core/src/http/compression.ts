// PROTOCOL.md "Compression", HTTP: request bodies with a Content-Encoding are inflated as they arrive
// and stop at the route's body limit (a bomb never inflates past it); responses are compressed for a
// client whose Accept-Encoding accepts it, above a threshold, with Vary: Accept-Encoding.
import { Readable } from 'node:stream'
import * as zlib from 'node:zlib'
import { DEFAULT_COMPRESSION_THRESHOLD } from '@trivium/wire'
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import {
  BODY_TOO_LARGE_MESSAGE,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
  ValidationException,
} from '../errors.js'
import { SETUP } from '../setup-errors.js'

type Coding = 'zstd' | 'br' | 'gzip' | 'deflate'

/** zstd only where this Node has it (createZstdCompress: Node >= 22.15). */
const zstd = zlib as unknown as {
  createZstdDecompress?: () => zlib.Gunzip
  zstdCompressSync?: (body: Buffer) => Buffer
}
export const ZSTD_AVAILABLE = typeof zstd.createZstdDecompress === 'function'

/** The codings this server reads and writes, in its order of preference for responses. */
export const HTTP_CODINGS: readonly Coding[] = ZSTD_AVAILABLE
  ? ['zstd', 'br', 'gzip', 'deflate']
  : ['br', 'gzip', 'deflate']

const DECOMPRESSORS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
  ...(ZSTD_AVAILABLE ? { zstd: () => (zstd.createZstdDecompress as () => zlib.Gunzip)() } : {}),
}

const COMPRESSORS: Record<Coding, (body: Buffer) => Buffer> = {
  // Quality 4 / level 6: per-call CPU matters more than the last percent of size.
  br: (body) =>
    zlib.brotliCompressSync(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 4,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  gzip: (body) => zlib.gzipSync(body),
  deflate: (body) => zlib.deflateSync(body),
  zstd: (body) => (zstd.zstdCompressSync as (b: Buffer) => Buffer)(body),
}

/** `aborted`, as Node's own request stream reports a body cut before its end. */
function abortedError(): Error {
  return Object.assign(new Error('aborted'), { code: 'ECONNRESET' })
}

/**
 * The request body inflated, lazily (nothing is read before Fastify's body reader reads), counting
 * inflated bytes: past `limit` it stops (the decompressor is destroyed: nothing more is inflated) and
 * fails with 413. `receivedEncodedLength` is the compressed size (Fastify compares it with
 * Content-Length). As Utf8CheckedBody, an error with no listener left is not emitted.
 */
export class InflatedBody extends Readable {
  receivedEncodedLength = 0
  /** Bytes inflated so far (at most the limit plus one decompressor chunk). */
  inflatedLength = 0
  readonly #source: RequestPayload
  readonly #inflater: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress
  readonly #limit: number
  readonly #coding: string
  #started = false
  #ended = false

  constructor(source: RequestPayload, coding: string, limit: number) {
    super()
    this.#source = source
    this.#coding = coding
    this.#limit = limit
    this.#inflater = (DECOMPRESSORS[coding] as () => zlib.Gunzip)()
  }

  override _read(): void {
    if (!this.#started) {
      this.#started = true
      const source = this.#source
      if (source.destroyed) {
        this.destroy(abortedError())
        return
      }
      const inflater = this.#inflater
      source.on('data', this.#onData)
      source.on('end', this.#onEnd)
      source.on('error', this.#onError)
      source.on('close', this.#onClose)
      inflater.on('data', this.#onInflated)
      inflater.on('end', () => this.push(null))
      inflater.on('error', () =>
        this.destroy(new ValidationException(`Request body is not valid ${this.#coding} data`)),
      )
      inflater.on('drain', () => this.#source.resume())
    }
    this.#inflater.resume()
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    this.receivedEncodedLength += bytes.length
    if (!this.#inflater.write(bytes)) this.#source.pause()
  }

  readonly #onInflated = (chunk: Buffer): void => {
    this.inflatedLength += chunk.length
    if (this.inflatedLength > this.#limit) {
      this.destroy(new PayloadTooLargeException(BODY_TOO_LARGE_MESSAGE))
      return
    }
    if (!this.push(chunk)) this.#inflater.pause()
  }

  readonly #onEnd = (): void => {
    this.#ended = true
    this.#inflater.end()
  }

  readonly #onError = (err: Error): void => {
    this.destroy(err)
  }

  readonly #onClose = (): void => {
    if (!this.#ended) this.destroy(abortedError())
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    const source = this.#source
    source.removeListener('data', this.#onData)
    source.removeListener('end', this.#onEnd)
    source.removeListener('error', this.#onError)
    source.removeListener('close', this.#onClose)
    this.#inflater.removeListener('data', this.#onInflated)
    this.#inflater.on('error', () => {}) // destroying mid-stream may still report
    this.#inflater.destroy()
    done(this.listenerCount('error') > 0 ? err : null)
  }
}

/**
 * The body to parse for a request with `Content-Encoding`: inflated and bounded, unchanged (identity,
 * or already inflated by an earlier preParsing hook such as @fastify/compress's, which sets
 * `receivedEncodedLength` as Fastify asks decompressing hooks to), or a 415 for a coding this server
 * does not read.
 */
export function decodeContent(request: FastifyRequest, payload: RequestPayload): RequestPayload {
  const header = request.headers['content-encoding']
  if (header === undefined) return payload
  const coding = header.trim().toLowerCase()
  if (coding === 'identity' || coding === '') return payload
  if ('receivedEncodedLength' in payload) return payload
  if (DECOMPRESSORS[coding] === undefined) {
    throw new UnsupportedMediaTypeException(
      `Unsupported Content-Encoding: ${header} (accepted: ${HTTP_CODINGS.join(', ')})`,
    )
  }
  return new InflatedBody(payload, coding === 'x-gzip' ? 'gzip' : coding, request.routeOptions.bodyLimit)
}

export interface HttpCompressionOptions {
  /** Smallest response body compressed, in bytes (default 1024). */
  threshold?: number
  /** Codings offered, in order of preference (default: zstd where present, br, gzip, deflate). */
  encodings?: Coding[]
}

export interface ResolvedHttpCompression {
  threshold: number
  encodings: readonly Coding[]
}

export function resolveHttpCompression(value: unknown): ResolvedHttpCompression | undefined {
  if (value === undefined || value === false) return undefined
  if (value === true) return { threshold: DEFAULT_COMPRESSION_THRESHOLD, encodings: HTTP_CODINGS }
  const fail = (why: string): never => {
    throw SETUP.TRV_CORE_COMPRESSION(why)
  }
  if (typeof value !== 'object' || value === null) fail('must be true, false or { threshold, encodings }')
  const { threshold = DEFAULT_COMPRESSION_THRESHOLD, encodings = HTTP_CODINGS } =
    value as HttpCompressionOptions
  if (!Number.isInteger(threshold) || threshold < 0)
    fail('threshold must be an integer of at least 0 (bytes)')
  if (!Array.isArray(encodings) || encodings.length === 0) fail('encodings must be a non-empty list')
  for (const e of encodings) {
    if (!HTTP_CODINGS.includes(e)) {
      fail(
        `encodings: ${JSON.stringify(e)} is not available (this Node offers ${HTTP_CODINGS.join(', ')}${ZSTD_AVAILABLE ? '' : '; zstd needs Node >= 22.15'})`,
      )
    }
  }
  return { threshold, encodings }
}

/**
 * The coding to answer with for an Accept-Encoding header: the highest q-value among `offered`, ties
 * by the server's order; `*` stands for any coding not named; q=0 refuses. Undefined: none.
 */
export function chooseCoding(header: string | undefined, offered: readonly Coding[]): Coding | undefined {
  if (!header) return undefined
  const q = new Map<string, number>()
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (!name) continue
    let value = 1
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)
      if (m) value = Number(m[1])
    }
    if (!Number.isNaN(value)) q.set(name === 'x-gzip' ? 'gzip' : name, value)
  }
  let best: Coding | undefined
  let bestQ = 0
  for (const coding of offered) {
    const value = q.get(coding) ?? q.get('*') ?? 0
    if (value > bestQ) {
      best = coding
      bestQ = value
    }
  }
  return best
}

/** The route's onSend: compresses a body over the threshold unless it already has a Content-Encoding. */
export function compressionHook(options: ResolvedHttpCompression) {
  return function compressReply(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: Error | null, payload?: unknown) => void,
  ): void {
    const size =
      typeof payload === 'string'
        ? payload.length < options.threshold
          ? 0
          : Buffer.byteLength(payload)
        : payload instanceof Uint8Array
          ? payload.length
          : -1
    // Streams (event streams) and small bodies go as they are; so does a body someone already
    // encoded (@fastify/compress, or the application): never twice.
    if (size < options.threshold || request.method === 'HEAD' || reply.hasHeader('content-encoding')) {
      done(null, payload)
      return
    }
    const vary = reply.getHeader('vary')
    if (vary === undefined) reply.header('vary', 'Accept-Encoding')
    else if (!/(^|,)\s*(accept-encoding|\*)\s*(,|$)/i.test(String(vary)))
      reply.header('vary', `${String(vary)}, Accept-Encoding`)
    const coding = chooseCoding(request.headers['accept-encoding'], options.encodings)
    if (coding === undefined) {
      done(null, payload)
      return
    }
    const body = typeof payload === 'string' ? Buffer.from(payload) : (payload as Buffer)
    const packed = COMPRESSORS[coding](body)
    reply.header('content-encoding', coding)
    reply.removeHeader('content-length')
    done(null, packed)
  }
}
