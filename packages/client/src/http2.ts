// Client and bidirectional streams over HTTP/2 (PROTOCOL.md "Client and bidirectional streams", "Over
// HTTP/2") for the Node entry: Node's `http2` (one session per client, each call its own stream), items
// in envelopes in the request body, `end()` ends the body, `cancel()` resets the stream (RST_STREAM
// CANCEL). Unary calls and server streams stay on fetch. The handle is the frame transports' own.
import http2, {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type SecureClientSessionOptions,
} from 'node:http2'
import {
  BINARY_CONTENT_TYPE,
  ENVELOPE_END,
  ENVELOPE_ITEM,
  EnvelopeReader,
  encodeEnvelope,
  STREAM_CONTENT_TYPE_PREFIX,
} from '@trivium/wire'
import { RequestStreamCall } from './client-streams.js'
import { type ErrorBody, fromErrorBody, NetworkException } from './errors.js'
import {
  decodeJsonItem,
  decodeResponse,
  errorFromResponse,
  HttpClient,
  type HttpClientOptions,
  type HttpInternals,
} from './http.js'
import type { BidiStreamCall, ClientStreamCall, EndpointSpec } from './types.js'

/** Unflushed item bytes a stream may hold before `send()` waits for the connection (backpressure). */
const SEND_WINDOW_BYTES = 64 * 1024
/** The largest response item read (the server's default item limit). */
const MAX_RESPONSE_ITEM_BYTES = 1024 * 1024
const encoder = new TextEncoder()

export interface Http2ClientOptions {
  /** TLS options of the HTTP/2 session (`ca` for a private CA, …); ignored for `http://` (h2c). */
  tls?: Pick<SecureClientSessionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>
}

/** The HTTP client whose client and bidirectional streams go over one HTTP/2 session. */
export class Http2StreamingClient extends HttpClient {
  #session: ClientHttp2Session | undefined
  readonly #tls: Http2ClientOptions['tls']

  constructor(options: HttpClientOptions, http2Options: Http2ClientOptions, internals: HttpInternals = {}) {
    const onClose = internals.onClose
    super(options, {
      ...internals,
      onClose: async () => {
        this.#session?.close()
        await onClose?.()
      },
    })
    this.#tls = http2Options.tls
  }

  /** The session, opened on first use and again after it closed. */
  #connect(): ClientHttp2Session {
    const open = this.#session
    if (open !== undefined && !open.closed && !open.destroyed) return open
    const origin = new URL(this.baseUrl).origin
    const session = http2.connect(origin, origin.startsWith('https:') ? { ...this.#tls } : {})
    // A session error fails its streams (each `close`s); nothing else listens.
    session.on('error', () => {})
    this.#session = session
    return session
  }

  protected override openRequestStream(
    spec: EndpointSpec,
    bidi: boolean,
    signal: AbortSignal | undefined,
  ): ClientStreamCall<unknown, unknown> | BidiStreamCall<unknown, unknown> {
    const call = new RequestStreamCall(spec, bidi)
    const binary = this.useBinary(spec.request, 'encode')
    let stream: ClientHttp2Stream | undefined
    /** Item bytes written while the stream's buffer was full: their credit comes back at its `drain`. */
    let owed = 0
    call.transport = {
      open: async () => {
        if (signal?.aborted) throw signal.reason
        const headers = await this.#headers(spec, binary)
        if (call.settled) return
        stream = this.#connect().request(headers)
        readResponse(stream, spec, bidi, call)
        call.credit(SEND_WINDOW_BYTES)
      },
      encode: async (value) =>
        binary
          ? (spec.request.encode as (v: unknown) => Uint8Array)(value)
          : encoder.encode(JSON.stringify(spec.request.toJSON(value))),
      item: (bytes) => {
        const s = stream
        if (s === undefined || s.closed) return
        const cost = Math.max(1, bytes.length)
        // Credit comes back once the bytes are handed to the session: HTTP/2's window paces the rest.
        if (owed === 0 && s.write(encodeEnvelope(ENVELOPE_ITEM, bytes))) {
          call.credit(cost)
          return
        }
        if (owed > 0) s.write(encodeEnvelope(ENVELOPE_ITEM, bytes))
        owed += cost
        if (owed === cost) {
          s.once('drain', () => {
            const back = owed
            owed = 0
            call.credit(back)
          })
        }
      },
      end: () => {
        if (stream !== undefined && !stream.closed) stream.end()
      },
      // RST_STREAM: destroy(), not close(code), which ends the body first (a half-close the server acts on).
      cancel: () => {
        if (stream !== undefined && !stream.closed) stream.destroy()
      },
    }
    if (signal) {
      const onAbort = () => call.cancel(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      call.onSettled = () => signal.removeEventListener('abort', onAbort)
    }
    call.start()
    return call as ClientStreamCall<unknown, unknown> | BidiStreamCall<unknown, unknown>
  }

  async #headers(spec: EndpointSpec, binary: boolean): Promise<Record<string, string>> {
    const url = new URL(this.baseUrl + spec.url)
    const format = binary ? 'binary' : 'json'
    const headers: Record<string, string> = {
      ...this.headers,
      ':method': 'POST',
      ':path': url.pathname + url.search,
      'content-type': STREAM_CONTENT_TYPE_PREFIX + format,
      accept: `${STREAM_CONTENT_TYPE_PREFIX}${format}, application/json`,
    }
    const token = await this.currentToken()
    if (token) headers.authorization = `Bearer ${token}`
    const traceparent = this.currentTraceparent()
    if (traceparent) headers.traceparent = traceparent
    // No Trivium-Timeout-Ms: the client's default per-call deadline would cut a long stream; the
    // endpoint's own timeoutMs bounds it on the server.
    return headers
  }
}

/** Settles the call from the response: one answer (client stream, or any error), or envelopes (bidi). */
function readResponse(
  stream: ClientHttp2Stream,
  spec: EndpointSpec,
  bidi: boolean,
  call: RequestStreamCall,
): void {
  let status = 0
  let headers = new Headers()
  let envelopes: EnvelopeReader | undefined
  const chunks: Uint8Array[] = []
  stream.on('response', (head) => {
    status = Number(head[':status'])
    headers = new Headers()
    for (const [name, value] of Object.entries(head)) {
      if (!name.startsWith(':') && value !== undefined) headers.set(name, String(value))
    }
    const type = headers.get('content-type') ?? ''
    if (bidi && status === 200 && type.startsWith(STREAM_CONTENT_TYPE_PREFIX)) {
      envelopes = new EnvelopeReader(MAX_RESPONSE_ITEM_BYTES, [ENVELOPE_ITEM, ENVELOPE_END])
    }
  })
  stream.on('data', (chunk: Uint8Array) => {
    if (envelopes === undefined) {
      chunks.push(chunk)
      return
    }
    try {
      for (const { flags, payload } of envelopes.push(chunk)) {
        if (flags === ENVELOPE_END) finishStream(payload, call)
        else call.item(decodeItem(spec, headers.get('content-type'), payload))
      }
    } catch (err) {
      call.finish(err instanceof NetworkException ? err : badResponse(spec, err))
      stream.destroy()
    }
  })
  stream.on('end', () => {
    if (envelopes !== undefined || call.settled) return
    const bytes = Buffer.concat(chunks)
    if (status < 200 || status > 299)
      call.finish(errorFromResponse({ status, statusText: '', headers }, bytes))
    else if (bidi)
      call.finish(new NetworkException(`Bad response from ${spec.name}: not a stream of envelopes`))
    else {
      try {
        call.finish(undefined, decodeResponse(spec, headers.get('content-type'), bytes))
      } catch (err) {
        call.finish(err)
      }
    }
  })
  // Closed before the answer (reset, connection lost): the stream failed.
  stream.on('close', () => {
    if (!call.settled) {
      call.finish(
        new NetworkException(`Stream ${spec.name} interrupted: connection lost (code ${stream.rstCode})`),
      )
    }
  })
  stream.on('error', () => {})
}

function decodeItem(spec: EndpointSpec, contentType: string | null, payload: Uint8Array): unknown {
  if (contentType?.startsWith(`${STREAM_CONTENT_TYPE_PREFIX}json`)) {
    return decodeJsonItem(spec, new TextDecoder('utf-8', { fatal: true }).decode(payload))
  }
  return decodeResponse(spec, BINARY_CONTENT_TYPE, payload)
}

/** The end envelope: `{}` ends the stream, `{"error": <error body>}` fails it. */
function finishStream(payload: Uint8Array, call: RequestStreamCall): void {
  const end = JSON.parse(new TextDecoder().decode(payload)) as { error?: Partial<ErrorBody> }
  if (end !== null && typeof end === 'object' && end.error !== undefined)
    call.finish(fromErrorBody(end.error))
  else call.finish()
}

function badResponse(spec: EndpointSpec, err: unknown): NetworkException {
  return new NetworkException(`Bad response from ${spec.name}: ${(err as Error).message}`, { cause: err })
}
