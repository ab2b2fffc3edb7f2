// Decoding rules of PROTOCOL.md for HTTP bodies, applied before Fastify's content-type parser:
//   - `Content-Length: 0` is no body, whatever the Content-Type: the endpoint gets the empty model;
//   - a body with a Content-Encoding is inflated, the limit applying to the inflated size;
//   - a JSON body must be valid UTF-8 (Fastify's parser would decode it lossily, storing U+FFFD).
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import { ValidationException } from '../errors.js'
import { decodeContent } from './compression.js'

const JSON_TYPE = /^\s*application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/** What a request stream that ended before its body did fails with (as Node's own `aborted`). */
function abortedError(): Error {
  return Object.assign(new Error('aborted'), { code: 'ECONNRESET' })
}

/**
 * The request body, unchanged, failing on the first invalid UTF-8 sequence. Lazy: nothing is read
 * from the request before the consumer (Fastify's body reader) reads, so an error can only be raised
 * while that consumer listens. An error with no listener left (the reader gave up: body too large)
 * is not emitted, as Node's IncomingMessage does: a stream of the request never ends the process.
 */
export class Utf8CheckedBody extends Readable {
  readonly #source: RequestPayload
  #received = 0
  readonly #decoder = new TextDecoder('utf-8', { fatal: true })
  #started = false
  #ended = false

  constructor(source: RequestPayload) {
    super()
    this.#source = source
  }

  /**
   * The bytes read from the request (Fastify compares them with Content-Length and the body limit): the
   * source's own count when it inflates a compressed body (its compressed size), else what passed here.
   */
  get receivedEncodedLength(): number {
    const inner = (this.#source as { receivedEncodedLength?: unknown }).receivedEncodedLength
    return typeof inner === 'number' ? inner : this.#received
  }

  override _read(): void {
    const source = this.#source
    if (!this.#started) {
      this.#started = true
      // Aborted before anyone read: IncomingMessage emitted no error then (it had no listener).
      if (source.destroyed) {
        this.destroy(abortedError())
        return
      }
      source.on('data', this.#onData)
      source.on('end', this.#onEnd)
      source.on('error', this.#onError)
      source.on('close', this.#onClose)
    }
    source.resume()
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk
    this.#received += bytes.length
    try {
      // `stream: true`: a character cut between two chunks is completed by the next one.
      this.#decoder.decode(bytes, { stream: true })
    } catch {
      this.destroy(new ValidationException('Request body is not valid UTF-8'))
      return
    }
    if (!this.push(bytes)) this.#source.pause()
  }

  readonly #onEnd = (): void => {
    this.#ended = true
    try {
      this.#decoder.decode() // a body ending inside a character
    } catch {
      this.destroy(new ValidationException('Request body is not valid UTF-8'))
      return
    }
    this.push(null)
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
    done(this.listenerCount('error') > 0 ? err : null)
  }
}

export async function strictBody(
  request: FastifyRequest,
  _reply: FastifyReply,
  payload: RequestPayload,
): Promise<RequestPayload> {
  const headers = request.headers
  if (headers['content-length'] === '0' && headers['transfer-encoding'] === undefined) {
    // Fastify then skips its parsers (no Content-Type, no length): the body is absent.
    delete headers['content-type']
    return payload
  }
  // PROTOCOL.md "Compression": a Content-Encoding is inflated first, bounded by the body limit.
  const body = decodeContent(request, payload)
  const type = headers['content-type']
  if (type === undefined || !JSON_TYPE.test(type)) return body
  return new Utf8CheckedBody(body)
}
