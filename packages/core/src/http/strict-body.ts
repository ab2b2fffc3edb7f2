// Decoding rules of PROTOCOL.md for HTTP bodies, applied before Fastify's content-type parser:
//   - `Content-Length: 0` is no body, whatever the Content-Type: the endpoint gets the empty model;
//   - a JSON body must be valid UTF-8 (Fastify's parser would decode it lossily, storing U+FFFD).
import { Transform, type TransformCallback } from 'node:stream'
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import { ValidationException } from '../errors.js'

const noop = (): void => {}
const JSON_TYPE = /^\s*application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/** Passes the bytes through unchanged and fails on the first invalid UTF-8 sequence. */
class Utf8Check extends Transform {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true })

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.decoder.decode(chunk, { stream: true })
    } catch {
      done(new ValidationException('Request body is not valid UTF-8'))
      return
    }
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
    try {
      this.decoder.decode()
    } catch {
      done(new ValidationException('Request body is not valid UTF-8'))
      return
    }
    done()
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
  const type = headers['content-type']
  if (type === undefined || !JSON_TYPE.test(type)) return payload
  const checked = payload.pipe(new Utf8Check())
  payload.on('error', (err) => checked.destroy(err))
  // A client gone away errors the request ('aborted'), possibly before Fastify's body reader listens
  // on this stream: an 'error' without a listener would crash the process.
  checked.on('error', noop)
  return checked
}
