// A named Fastify route's HTTP answer as a frame's (PROTOCOL.md "Named routes"). Frames carry JSON and
// the one error body, so: a success must be JSON (a route that answers text, a file or a stream of another
// type is a server fault: 500, logged once per route, naming it); an error in the Trivium body (the
// route's error handler is core's) passes as it is, and any other error answer (a hook's own
// `reply.code(401).send(…)`) becomes the Trivium error of its status, as core answers such statuses.
import {
  type EndpointDefinition,
  InternalErrorException,
  type TriviumError,
  toErrorBody,
} from '@trivium/core'
import { errorOfStatus, INTERNAL_ERROR_MESSAGE, namedRouteStream } from '@trivium/core/internal'
import type { FastifyBaseLogger } from 'fastify'
import type { RouteAnswer } from './route-bridge.js'

/** Routes already logged for a non-JSON answer (a fault of the route, not of each call). */
const logged = new WeakSet<EndpointDefinition>()
const NO_HEADERS = { getHeader: () => undefined }

/** What Fastify sets for a JSON reply: recognised without splitting and lower-casing the header per call. */
const FASTIFY_JSON = 'application/json; charset=utf-8'

function typeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase()
}

function isType(contentType: string | undefined, expected: string | undefined): boolean {
  return expected !== undefined && typeOf(contentType) === expected
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === FASTIFY_JSON) return true
  const type = typeOf(contentType)
  if (type === undefined) return false
  return type === 'application/json' || (type?.startsWith('application/') === true && type.endsWith('+json'))
}

function isErrorBody(body: Uint8Array | string): boolean {
  try {
    const text =
      typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString()
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== 'object' || parsed === null) return false
    const { code, error, message } = parsed as Record<string, unknown>
    return typeof code === 'string' && typeof error === 'string' && typeof message === 'string'
  } catch {
    return false
  }
}

function failed(out: RouteAnswer, error: TriviumError): RouteAnswer {
  // The requestId is the frame's: the session writes `<connection>:<frame id>` over this one.
  const body = Buffer.from(JSON.stringify(toErrorBody(error, '')))
  return { ...out, ok: false, body, statusCode: error.statusCode, contentType: 'application/json' }
}

export function namedRouteOutcome(
  log: FastifyBaseLogger,
  definition: EndpointDefinition,
  out: RouteAnswer,
): RouteAnswer {
  if (out.statusCode === 0) return out // cancelled or the connection went away: nothing is sent
  if (!out.ok) return isErrorBody(out.body) ? out : failed(out, errorOfStatus(out.statusCode, NO_HEADERS))
  // A streamed answer was read as it came (named-route-stream.ts); any other 2xx is not the stream.
  if (definition.streaming)
    return out.statusCode < 300 && isType(out.contentType, namedRouteStream(definition))
      ? out
      : notStreamed(log, definition, out)
  if (out.body.length === 0 || isJson(out.contentType)) return out
  return routeFault(
    log,
    definition,
    out,
    `named route ${definition.name} answered ${out.contentType ?? 'no Content-Type'}: frames carry JSON (PROTOCOL.md "Named routes"); answer JSON, or leave the route unnamed`,
  )
}

/** A streaming named route that answered 2xx without its stream: a fault of the route, 500. */
function notStreamed(log: FastifyBaseLogger, definition: EndpointDefinition, out: RouteAnswer): RouteAnswer {
  return routeFault(
    log,
    definition,
    out,
    `named route ${definition.name} answered ${out.contentType ?? 'no Content-Type'} without a stream: its response declares ${namedRouteStream(definition)} (PROTOCOL.md "Named routes"); send a stream of that type`,
  )
}

/** The route's own fault (its answer's form, not the call's): 500, logged once per route. */
function routeFault(
  log: FastifyBaseLogger,
  definition: EndpointDefinition,
  out: RouteAnswer,
  message: string,
): RouteAnswer {
  if (!logged.has(definition)) {
    logged.add(definition)
    log.error(
      {
        endpoint: definition.name,
        route: `${definition.method} ${definition.url}`,
        contentType: out.contentType,
      },
      message,
    )
  }
  return failed(out, new InternalErrorException(INTERNAL_ERROR_MESSAGE))
}
