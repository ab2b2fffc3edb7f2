// HTTP transport of streaming endpoints: Server-Sent Events, one JSON item per `item` event,
// then `end`, or `error` with the error body (PROTOCOL.md "HTTP streaming").
import { Readable } from 'node:stream'
import type { Session, SessionHub } from '@trivium/wire/sessions'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TriviumCall } from '../call.js'
import {
  type ErrorBody,
  normalizeError,
  ServiceUnavailableException,
  TokenExpiredException,
  type TriviumError,
  toErrorBody,
  UnauthorizedException,
} from '../errors.js'
import type { WireFormat } from '../formats.js'
import type { EndpointDefinition } from '../registry.js'
import { STOPPED, StreamStop } from '../stream-stop.js'
import { atExpiry, TOKEN_EXPIRED_MESSAGE } from '../token-expiry.js'

/** What every transport tells callers while the app shuts down (SSE `error` event, frame ERROR, GOAWAY). */
export const SHUTDOWN_MESSAGE = 'Server is shutting down'

const noop = (): void => {}

/** One open event stream, as the push hub sees it: `closeSessions` ends it like a WebSocket/TCP session. */
class EventStreamSession implements Session {
  readonly protocol = 'http'
  userId: string | undefined = undefined
  tokenId: string | undefined = undefined
  readonly topics = new Set<string>()
  /** Cancels the end of the stream at its token's expiry. */
  cancelExpiry: (() => void) | undefined = undefined
  constructor(
    readonly id: string,
    readonly stop: (error: TriviumError) => void,
  ) {}
  push(): void {}
  close(reason: string): void {
    this.stop(new UnauthorizedException(reason))
  }
}

/**
 * The event streams open on one app. Each registers in the frame transports' session hub (when the app
 * has one), so a revocation's `closeSessions` ends it with the 401; its token's expiry ends it with the
 * 401 `Token has expired` (as a frame session); shutdown ends them all with the 503.
 */
export class EventStreams {
  /** `fastify.push` of @trivium/frame-session, set through `trivium.sessionHub`. */
  hub: SessionHub | undefined = undefined
  /** Set when the app starts shutting down: calls that arrive later are refused with 503. */
  closing = false
  readonly #open = new Set<EventStreamSession>()

  open(call: TriviumCall, stop: (error: TriviumError) => void): EventStreamSession {
    const session = new EventStreamSession(call.requestId, stop)
    this.#open.add(session)
    const identity = call.identity
    if (this.hub !== undefined) {
      this.hub.add(session)
      if (identity !== undefined) this.hub.identify(session, identity.userId, identity.tokenId)
    }
    const expiresAt = identity?.expiresAt
    if (typeof expiresAt === 'number' && Number.isFinite(expiresAt)) {
      session.cancelExpiry = atExpiry(expiresAt, () => stop(new TokenExpiredException(TOKEN_EXPIRED_MESSAGE)))
    }
    if (this.closing) stop(new ServiceUnavailableException(SHUTDOWN_MESSAGE))
    return session
  }

  closed(session: EventStreamSession): void {
    session.cancelExpiry?.()
    this.#open.delete(session)
    this.hub?.delete(session)
  }

  /** Shutdown: every open stream ends with the 503 `error` event. */
  shutdown(): void {
    this.closing = true
    const error = new ServiceUnavailableException(SHUTDOWN_MESSAGE)
    for (const session of [...this.#open]) session.stop(error)
  }
}

/**
 * How a response stream is written: Server-Sent Events (HTTP/1.1 and HTTP/2 server streams) or envelopes
 * (bidirectional streams over HTTP/2). Revocation, token expiry and shutdown end either the same way.
 */
export interface StreamFraming {
  readonly contentType: string
  /** Written first, so the status and headers reach the client now, not with the first item. */
  readonly open: string | Uint8Array | undefined
  item(data: string | Uint8Array, id: number): string | Uint8Array
  readonly end: string | Uint8Array
  error(body: ErrorBody): string | Uint8Array
}

const SSE_FRAMING: StreamFraming = {
  contentType: 'text/event-stream; charset=utf-8',
  open: ': stream open\n\n',
  item: (data, id) =>
    `id: ${id}\nevent: item\ndata: ${typeof data === 'string' ? data : Buffer.from(data).toString('utf8')}\n\n`,
  end: 'event: end\ndata: {}\n\n',
  error: (body) => `event: error\ndata: ${JSON.stringify(body)}\n\n`,
}

export function sendEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  definition: EndpointDefinition,
  format: WireFormat,
  items: AsyncIterable<unknown>,
  call: TriviumCall,
  streams: EventStreams,
  /** The handler's `call.signal` (aborted when the stream ends, whatever ends it). */
  controller: AbortController,
  framing: StreamFraming = SSE_FRAMING,
  /** Ends the stream from outside too (a broken request stream), with its error. */
  stopper: StreamStop<TriviumError> = new StreamStop<TriviumError>(),
): FastifyReply {
  async function* events(): AsyncGenerator<string | Uint8Array> {
    let id = 0
    const iterator = items[Symbol.asyncIterator]()
    // A revocation or the shutdown ends the stream even while the handler waits for its next item.
    const stop = (error: TriviumError): void => stopper.stop(error)
    const session = streams.open(call, stop)
    try {
      if (framing.open !== undefined) yield framing.open
      while (true) {
        const step = await stopper.wait(iterator.next())
        if (step === STOPPED) throw stopper.reason
        if (step.done) break
        yield framing.item(format.encode(definition.response, step.value), id++)
      }
      yield framing.end
    } catch (err) {
      const { error, internal } = normalizeError(err)
      if (internal) request.log.error({ err, requestId: request.id }, 'unhandled error in stream')
      yield framing.error(toErrorBody(error, request.id))
    } finally {
      // Runs when the client goes away too (Readable.from destroys the generator): stop the handler.
      // Not awaited: a generator stuck in an await must not hold the response (call.signal tells it).
      streams.closed(session)
      controller.abort(new Error('stream ended'))
      iterator.return?.()?.catch?.(noop)
    }
  }
  return reply
    .code(200)
    .header('cache-control', 'no-cache')
    .type(framing.contentType)
    .send(Readable.from(events()))
}
