// A request body that never ends, over HTTP/2 (PROTOCOL.md "HTTP/2"). Over HTTP/1.1 Node's `requestTimeout`
// (300 s) answers such a request 408; Node's http2 server has no such timer, and a session stays open while
// any of its streams trickles bytes. So an endpoint's HTTP/2 stream must finish its request within the
// call's deadline (`Trivium-Timeout-Ms`, the endpoint's `timeoutMs`), answered with the deadline error, or
// within HTTP/1.1's 300 s, answered 408 as Node answers HTTP/1.1; the stream is then closed.
import type { ServerHttp2Stream } from 'node:http2'
import { deadlineExceededMessage } from '@trivium/wire'
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { callDeadline } from '../deadline.js'
import { TimeoutException, type TriviumError } from '../errors.js'
import type { EndpointDefinition } from '../registry.js'
import { replyWithError } from './error-reply.js'
import { REQUEST_TIMED_OUT_MESSAGE } from './framework-errors.js'
import { withStatus } from './status-errors.js'

/** Node's HTTP/1.1 `requestTimeout` default: the longest a request may take to arrive without a deadline. */
export const HTTP2_REQUEST_TIMEOUT_MS = 300_000

function bound(
  request: FastifyRequest,
  definition: EndpointDefinition,
): { ms: number; error: () => TriviumError } {
  try {
    const deadline = callDeadline('http', request.headers, undefined, definition.timeoutMs)
    if (deadline !== undefined) {
      return { ms: deadline.ms, error: () => new TimeoutException(deadlineExceededMessage(deadline.ms)) }
    }
  } catch {
    // An invalid Trivium-Timeout-Ms is refused with its 400 once the body is read; until then, Node's bound.
  }
  return {
    ms: HTTP2_REQUEST_TIMEOUT_MS,
    error: () => withStatus(new TimeoutException(REQUEST_TIMED_OUT_MESSAGE), 408),
  }
}

/** The route's `onRequest` hook on an app serving HTTP/2 (HTTP/1.1 requests pass through untouched). */
export function http2BodyDeadline(definition: EndpointDefinition): onRequestHookHandler {
  return function bodyDeadline(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const raw = request.raw as FastifyRequest['raw'] & { stream?: ServerHttp2Stream }
    // No body to wait for: HEADERS carried END_STREAM.
    if (raw.httpVersionMajor !== 2 || raw.stream === undefined || raw.stream.endAfterHeaders) {
      done()
      return
    }
    const { ms, error } = bound(request, definition)
    const timer = setTimeout(() => {
      if (reply.sent || raw.readableEnded) return
      replyWithError(error(), request, reply)
      // The answer is sent; the request half still open is closed (RST_STREAM NO_ERROR, RFC 9113 §8.1).
      raw.stream?.close()
    }, ms)
    const clear = (): void => clearTimeout(timer)
    raw.once('end', clear)
    reply.raw.once('close', clear)
    done()
  }
}
