// Client and bidirectional streams over HTTP (PROTOCOL.md "Client and bidirectional streams", "Over HTTP"):
// over HTTP/2 the request body is the stream of items, in envelopes (@trivium/wire's envelope.ts); over
// HTTP/1.1 the route refuses. The items go through core's RequestInbox, as on frames (same window, same
// per-item decoding), and the call through the same pipeline (auth, rate limits, deadlines) as any call.
import type { Http2ServerRequest, Http2Stream } from 'node:http2'
import {
  Cancellation,
  ENVELOPE_END,
  ENVELOPE_ITEM,
  EnvelopeError,
  EnvelopeReader,
  encodeEnvelope,
  STREAM_CONTENT_TYPE_PREFIX,
} from '@trivium/wire'
import type { FastifyInstance, FastifyReply, FastifyRequest, RequestPayload } from 'fastify'
import { TriviumCall } from '../call.js'
import { callDeadline } from '../deadline.js'
import {
  PayloadTooLargeException,
  type TriviumError,
  UnsupportedMediaTypeException,
  ValidationException,
} from '../errors.js'
import { type FormatRegistry, jsonFormat, type WireFormat } from '../formats.js'
import { type EndpointDefinition, requestStreamOverHttpMessage } from '../registry.js'
import { itemCost, RequestInbox } from '../request-inbox.js'
import { routeToHandler } from '../router.js'
import { StreamStop } from '../stream-stop.js'
import { sendError } from './error-reply.js'
import type { HttpRouteContext } from './route.js'
import { sendValue } from './route.js'
import { type StreamFraming, sendEventStream } from './sse.js'
import { CALL } from './symbols.js'

// HTTP/2's NO_ERROR code (RFC 9113 §7), written here so that importing core does not load node:http2
// (~45 M instructions, bench/README.md "Cold import"); an app serving HTTP/2 has loaded it anyway.
const NGHTTP2_NO_ERROR = 0

/** Item bytes held for a handler that has not taken them (the frame transports' default window). */
export const HTTP2_STREAM_WINDOW_BYTES = 256 * 1024

const encoder = new TextEncoder()
const EMPTY = new Uint8Array(0)

/** The envelopes of a bidirectional stream's response (items, then the end with `{}` or the error). */
function envelopeFraming(contentType: string): StreamFraming {
  return {
    contentType,
    // A zero-byte write: the status and headers go out before the first item.
    open: EMPTY,
    item: (data) => encodeEnvelope(ENVELOPE_ITEM, typeof data === 'string' ? encoder.encode(data) : data),
    end: encodeEnvelope(ENVELOPE_END, encoder.encode('{}')),
    error: (body) => encodeEnvelope(ENVELOPE_END, encoder.encode(JSON.stringify({ error: body }))),
  }
}

/** The request's format from `Content-Type: application/trivium-stream+<format>`; else 415. */
function streamFormat(request: FastifyRequest, formats: FormatRegistry): WireFormat {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
  const format = type.startsWith(STREAM_CONTENT_TYPE_PREFIX)
    ? formats.get(type.slice(STREAM_CONTENT_TYPE_PREFIX.length))
    : undefined
  if (format === undefined) {
    const types = formats
      .names()
      .map((name) => STREAM_CONTENT_TYPE_PREFIX + name)
      .join(' or ')
    throw new UnsupportedMediaTypeException(
      `Unsupported Content-Type: a stream of requests is sent as ${types}`,
    )
  }
  const coding = request.headers['content-encoding']
  if (coding !== undefined && coding !== 'identity') {
    throw new UnsupportedMediaTypeException('Content-Encoding is not supported on a stream of requests')
  }
  return format
}

export function registerRequestStreamRoute(
  fastify: FastifyInstance,
  definition: EndpointDefinition,
  ctx: HttpRouteContext,
  url: string,
): void {
  const refusal = requestStreamOverHttpMessage(definition.name)
  const maxItemBytes = definition.config.bodyLimit ?? ctx.bodyLimit
  fastify.route({
    method: definition.method,
    url,
    config: { trivium: definition },
    errorHandler: sendError,
    // HTTP/1.1 cannot carry a stream of requests: refused before the body is read.
    onRequest: (request, _reply, done) => {
      if (request.raw.httpVersionMajor === 2) done()
      else done(new ValidationException(refusal))
    },
    // The body is the stream of items: read here as it arrives. `done` is never called once the stream
    // started, so Fastify parses no body (and runs no later hook); the answer is sent from here.
    preParsing: (request, reply, payload, done) => {
      let format: WireFormat
      try {
        format = streamFormat(request, ctx.formats)
      } catch (err) {
        done(err as Error)
        return
      }
      serveRequestStream(request, reply, payload, definition, ctx, format, maxItemBytes)
    },
    handler: async () => {
      throw new ValidationException(refusal)
    },
  })
}

/**
 * RST_STREAM or a lost connection before the answer was written: the handler's signal aborts. (Node marks a
 * reset stream's writable side finished: what tells is that no answer was ended.) Answered before the
 * client's half-close (an error, a handler that stopped reading): the rest of the body is not wanted, so the
 * stream is reset with NO_ERROR once the answer is out (RFC 9113 §8.1).
 */
function watchStream(
  request: FastifyRequest,
  reply: FastifyReply,
  stream: Http2ServerRequest['stream'],
  entry: Cancellation,
): void {
  stream.once('close', () => {
    if (!reply.raw.writableEnded) entry.abort(new Error('client closed the request'))
  })
  stream.once('finish', () => {
    if (!request.raw.complete && !stream.closed) stream.close(NGHTTP2_NO_ERROR)
  })
}

/** The call of a stream of requests over HTTP/2: its items come from `inbox`, never from a body. */
function requestStreamCall(
  request: FastifyRequest,
  definition: EndpointDefinition,
  deadline: ReturnType<typeof callDeadline>,
  entry: Cancellation,
  inbox: RequestInbox,
): TriviumCall {
  const call = new TriviumCall({
    definition,
    deadline,
    protocol: 'http',
    requestId: request.id,
    log: request.log,
    headers: request.headers,
    method: request.method,
    query: request.query as Record<string, unknown>,
    clientIp: request.ip,
    raw: request,
    decodeBody: () => undefined,
    signal: entry.lazySignal,
    requests: inbox,
  })
  request[CALL] = call
  return call
}

function serveRequestStream(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: RequestPayload,
  definition: EndpointDefinition,
  ctx: HttpRouteContext,
  format: WireFormat,
  maxItemBytes: number,
): void {
  const entry = new Cancellation(true)
  const stopper = new StreamStop<TriviumError>()
  let answered = false
  let streaming = false
  /** The one answer: a typed error in the error body, or (streaming) the stream's end envelope. */
  const fail = (error: TriviumError): void => {
    stopReading()
    if (streaming) stopper.stop(error)
    else if (!answered) {
      answered = true
      reply.send(error)
    }
  }
  const stream = (request.raw as unknown as Http2ServerRequest).stream
  const body = new RequestBody(payload, maxItemBytes, stream, (error) => {
    // The stream is broken: the call ends (nothing it started commits), answered by this error only.
    entry.abort(new Error('refused: malformed stream of requests'))
    fail(error)
  })
  const stopReading = (): void => body.stop()
  const inbox = new RequestInbox(0, entry, definition, format, HTTP2_STREAM_WINDOW_BYTES, {
    credit: (count) => body.credit(count),
    stopSending: stopReading,
  })
  body.inbox = inbox
  watchStream(request, reply, stream, entry)
  const deadline = callDeadline('http', request.headers, undefined, definition.timeoutMs)
  const call = requestStreamCall(request, definition, deadline, entry, inbox)
  // The deadline bounds the whole stream: a handler waiting for an item is woken by it.
  const signal = call.signal
  signal.addEventListener('abort', () => inbox.fail(signal.reason), { once: true })
  // Shutdown and revocation stop a stream of requests at once, as on frames.
  const session = ctx.streams.open(call, (error) => {
    entry.abort(error)
    fail(error)
  })
  stream.once('close', () => ctx.streams.closed(session))
  body.start()
  Promise.resolve(ctx.pipeline.run(call, routeToHandler, deadline)).then(
    (value) => {
      if (answered) {
        if (definition.streaming) (value as AsyncIterable<unknown>)[Symbol.asyncIterator]().return?.()
        return
      }
      answered = true
      if (!definition.streaming) {
        stopReading()
        sendValue(request, reply, definition, ctx.formats, format, value)
        return
      }
      streaming = true
      const out = format === jsonFormat || definition.response.encode ? format : jsonFormat
      const controller = new AbortController()
      controller.signal.addEventListener('abort', () => entry.abort(controller.signal.reason), { once: true })
      const framing = envelopeFraming(STREAM_CONTENT_TYPE_PREFIX + out.name)
      const items = value as AsyncIterable<unknown>
      sendEventStream(request, reply, definition, out, items, call, ctx.streams, controller, framing, stopper)
    },
    (err: unknown) => {
      if (answered) return
      answered = true
      stopReading()
      reply.send(err)
    },
  )
}

/**
 * The request body as items: envelopes are split as chunks arrive and handed to the inbox while it has
 * credit; past it, reading pauses, so HTTP/2's window holds the client (flow control end to end).
 */
class RequestBody {
  inbox!: RequestInbox
  readonly #payload: RequestPayload
  readonly #reader: EnvelopeReader
  readonly #broken: (error: TriviumError) => void
  readonly #stream: Http2Stream
  readonly #pending: Uint8Array[] = []
  #available = 0
  #ended = false
  #halfClosed = false
  #stopped = false

  constructor(
    payload: RequestPayload,
    maxItemBytes: number,
    stream: Http2Stream,
    broken: (error: TriviumError) => void,
  ) {
    this.#payload = payload
    this.#stream = stream
    this.#reader = new EnvelopeReader(maxItemBytes)
    this.#broken = broken
  }

  start(): void {
    const payload = this.#payload
    payload.on('data', (chunk: Uint8Array) => this.#onData(chunk))
    payload.on('end', () => this.#onEnd())
    // An aborted body: the response's `close` aborts the call.
    payload.on('error', () => this.stop())
  }

  credit(count: number): void {
    this.#available += count
    this.#feed()
  }

  /** Nothing more is read: the rest of the body is discarded until the stream closes. */
  stop(): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#pending.length = 0
    this.#payload.resume()
  }

  #onData(chunk: Uint8Array): void {
    if (this.#stopped) return
    let envelopes: { payload: Uint8Array }[]
    try {
      envelopes = this.#reader.push(chunk)
    } catch (err) {
      this.#fail(err)
      return
    }
    for (const envelope of envelopes) this.#pending.push(envelope.payload)
    this.#feed()
  }

  #onEnd(): void {
    // A reset stream's body ends too (Node's compatibility API): that is no half-close.
    if (this.#stopped || this.#stream.aborted || this.#stream.destroyed) return
    try {
      this.#reader.end()
    } catch (err) {
      this.#fail(err)
      return
    }
    this.#ended = true
    this.#feed()
  }

  #fail(err: unknown): void {
    const message = (err as Error).message
    this.#broken(
      err instanceof EnvelopeError && err.tooLarge
        ? new PayloadTooLargeException(message)
        : new ValidationException(message),
    )
  }

  #feed(): void {
    const pending = this.#pending
    while (pending.length > 0 && this.#available > 0 && !this.#stopped) {
      const item = pending.shift() as Uint8Array
      this.#available -= itemCost(item)
      this.inbox.item(item)
    }
    if (this.#stopped) return
    if (pending.length > 0) {
      this.#payload.pause()
      return
    }
    if (!this.#ended) this.#payload.resume()
    else if (!this.#halfClosed) {
      this.#halfClosed = true
      this.inbox.end()
    }
  }
}
