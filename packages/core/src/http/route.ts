// The HTTP transport adapter: one Fastify route per endpoint. Fastify receives the request; this
// file is the parser (Fastify request → common request form) and the sender (value → reply).
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { TriviumCall } from '../call.js'
import { callDeadline } from '../deadline.js'
import {
  ServiceUnavailableException,
  UNSUPPORTED_CONTENT_TYPE_MESSAGE,
  UnsupportedMediaTypeException,
  ValidationException,
} from '../errors.js'
import {
  checkParsedJson,
  decodeRequest,
  type FormatRegistry,
  jsonFormat,
  refuseAnswerFormat,
  type WireFormat,
} from '../formats.js'
import type { Pipeline } from '../middleware.js'
import type { EndpointDefinition } from '../registry.js'
import { routeToHandler } from '../router.js'
import { isThenable } from '../thenable.js'
import { http2BodyDeadline } from './body-deadline.js'
import { compressionHook, type ResolvedHttpCompression } from './compression.js'
import { abortOnClientClose, type HttpCallInFlight, type HttpDrain } from './drain.js'
import { sendError } from './error-reply.js'
import { registerRequestStreamRoute } from './request-stream.js'
import { type EventStreams, SHUTDOWN_MESSAGE, sendEventStream } from './sse.js'
import { strictBody } from './strict-body.js'
import { CALL, type TransportOverride, transportOf } from './symbols.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The Trivium endpoint a route serves (set by @trivium/core). */
    trivium?: EndpointDefinition
  }
}

export interface HttpRouteContext {
  pipeline: Pipeline
  formats: FormatRegistry
  bodyLimit: number
  streams: EventStreams
  /** Response compression (PROTOCOL.md "Compression"); undefined: off. */
  compression: ResolvedHttpCompression | undefined
  /** Unary calls in flight, cut after the shutdown grace. */
  drain: HttpDrain
}

/**
 * Decodes the request model of a JSON (or bodiless) request from path, query and parsed body, by the
 * registry's HTTP mapping. One function per route, called with the call as `this` (TriviumCall.body):
 * no closure per request.
 */
function jsonDecoder(definition: EndpointDefinition): (this: TriviumCall) => unknown {
  const mapping = definition.http
  const model = definition.request
  return function decodeJson(this: TriviumCall): unknown {
    const request = this.raw as FastifyRequest
    // A body Fastify parsed: its depth and lone surrogates (percent-decoded path and query cannot hold one).
    if (mapping.hasBody) checkParsedJson(model, request.body)
    return model.fromJSON(
      mapping.fromHttp(
        request.params as Record<string, string> | undefined,
        request.query as Record<string, unknown>,
        mapping.hasBody ? request.body : undefined,
      ),
    )
  }
}

/** Decodes a request body in a format other than JSON (raw bytes, e.g. the binary format). */
function bytesDecoder(
  definition: EndpointDefinition,
  request: FastifyRequest,
  format: WireFormat,
): () => unknown {
  const mapping = definition.http
  const model = definition.request
  return () => {
    const raw = request.body
    if (!(raw instanceof Uint8Array)) throw new ValidationException('Request body is missing')
    const value = decodeRequest(definition.name, format, model, raw)
    if (mapping.pathParams.length === 0) return value
    const withPath = (decoded: unknown): unknown =>
      model.fromJSON(
        mapping.withPathParams(model.toJSON(decoded), request.params as Record<string, string> | undefined),
      )
    return isThenable(value) ? value.then(withPath) : withPath(value)
  }
}

/**
 * What the handler's promise resolves to once the reply is sent: nothing when the response is written
 * (no thenable to adopt), else the reply (a thenable Fastify waits on: a stream, an async onSend hook),
 * so that Fastify never sends a second answer.
 */
function pending(reply: FastifyReply): FastifyReply | undefined {
  return reply.sent ? undefined : reply
}

const JSON_REPLY_TYPE = 'application/json; charset=utf-8'

/** A unary answer: the handler's value in the format Accept asks for (JSON when the model has no other). */
export function sendValue(
  request: FastifyRequest,
  reply: FastifyReply,
  definition: EndpointDefinition,
  formats: FormatRegistry,
  requestFormat: WireFormat | undefined,
  result: unknown,
): FastifyReply {
  let responseFormat = formats.forAccept(request.headers.accept, requestFormat)
  if (responseFormat !== jsonFormat && !definition.response.encode) responseFormat = jsonFormat
  const payload = responseFormat.encode(definition.response, result)
  return reply
    .code(definition.status)
    .type(responseFormat === jsonFormat ? JSON_REPLY_TYPE : responseFormat.contentType)
    .send(
      typeof payload === 'string'
        ? payload
        : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
    )
}

/** What an endpoint's HTTP handler reads on each request: gathered once, at registration. */
interface EndpointRoute {
  readonly definition: EndpointDefinition
  readonly pipeline: Pipeline
  readonly formats: FormatRegistry
  readonly streams: EventStreams
  readonly drain: HttpDrain
  readonly decodeJson: (this: TriviumCall) => unknown
}

/** Sender: the handler's value (or stream) as the reply. */
function respond(
  route: EndpointRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  call: TriviumCall,
  requestFormat: WireFormat | undefined,
  result: unknown,
  stream: AbortController | undefined,
): FastifyReply {
  if (call.responseHeaders) reply.headers(call.responseHeaders)
  if (stream !== undefined) {
    const items = result as AsyncIterable<unknown>
    return sendEventStream(request, reply, route.definition, jsonFormat, items, call, route.streams, stream)
  }
  return sendValue(request, reply, route.definition, route.formats, requestFormat, result)
}

/**
 * The request body's format (undefined: no body), once the request is one this endpoint takes: a body
 * format it decodes, an answer format it can write, and not a call that arrived during shutdown.
 */
function admittedFormat(
  route: EndpointRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  transport: TransportOverride | undefined,
): WireFormat | undefined {
  const { definition, formats } = route
  let requestFormat: WireFormat | undefined
  if (definition.http.hasBody && request.body !== undefined) {
    requestFormat = formats.forContentType(request.headers['content-type'])
    // Fastify parses text/plain too; an endpoint only takes the formats it can decode.
    if (!requestFormat) throw new UnsupportedMediaTypeException(UNSUPPORTED_CONTENT_TYPE_MESSAGE)
  }
  const demanded = definition.streaming ? undefined : formats.demandedBy(request.headers.accept)
  if (demanded !== undefined) refuseAnswerFormat(definition.name, definition.response, demanded)
  // A call that arrived while the app shuts down (Fastify routes it with `Connection: close` once
  // closing, when its `return503OnClosing` is off) gets our 503 body; one routed before is answered.
  if (route.streams.closing && transport === undefined && reply.raw.getHeader('connection') === 'close') {
    throw new ServiceUnavailableException(SHUTDOWN_MESSAGE)
  }
  return requestFormat
}

/**
 * A unary call whose pipeline answered with a promise: counted until it settles. At shutdown, one still
 * running after the grace is answered 503 by the drain, and its late value or error is dropped (never a
 * second answer).
 */
function answerWhenSettled(
  route: EndpointRoute,
  request: FastifyRequest,
  reply: FastifyReply,
  call: TriviumCall,
  requestFormat: WireFormat | undefined,
  result: PromiseLike<unknown>,
  unary: HttpCallInFlight,
): Promise<FastifyReply | undefined> {
  const drain = route.drain
  drain.running(unary)
  return Promise.resolve(result).then(
    (value) => {
      drain.settled(unary)
      return unary.cut
        ? undefined
        : pending(respond(route, request, reply, call, requestFormat, value, undefined))
    },
    (err: unknown) => {
      drain.settled(unary)
      if (unary.cut) return undefined
      throw err
    },
  )
}

type EndpointHandler = (
  request: FastifyRequest,
  reply: FastifyReply,
) => FastifyReply | Promise<FastifyReply | undefined> | undefined

/** The route's handler: one closure per route (over `route`), none per request beyond the call's own. */
function endpointHandler(route: EndpointRoute): EndpointHandler {
  // Not async: when the middleware and the handler answer synchronously (no middleware, a handler that
  // returns a value), the reply is sent in this turn and Fastify gets `undefined` (no promise, no
  // microtask hops). A promise from the pipeline is returned to Fastify, which sends its rejection to
  // the route's error handler, as it does for an error thrown here.
  return function handler(request, reply) {
    const definition = route.definition
    const transport = transportOf(request)
    const requestFormat = admittedFormat(route, request, reply, transport)
    // A stream's signal also aborts when the stream ends (revocation, shutdown): made up front.
    const stream = definition.streaming ? new AbortController() : undefined
    const unary = stream ? undefined : route.drain.track(request, reply)
    const protocol = transport?.protocol ?? 'http'
    const deadline = callDeadline(protocol, request.headers, transport?.metadata, definition.timeoutMs)
    const call = new TriviumCall({
      definition,
      deadline,
      protocol,
      metadata: transport?.metadata,
      connection: transport?.connection,
      onIdentity: transport?.onIdentity,
      requestId: request.id,
      log: request.log,
      headers: request.headers,
      method: request.method,
      query: request.query as Record<string, unknown>,
      clientIp: transport ? transport.clientIp : request.ip,
      raw: request,
      // No `credential`: the protocol's default place (HTTP: the Authorization header, then `token` in
      // the query; a bridged frame: its metadata).
      decodeBody:
        requestFormat === undefined || requestFormat === jsonFormat
          ? route.decodeJson
          : bytesDecoder(definition, request, requestFormat),
      signal: unary ? () => unary.signal() : abortOnClientClose(reply, stream as AbortController),
    })
    request[CALL] = call
    const result = route.pipeline.run(call, routeToHandler, deadline)
    if (isThenable(result)) {
      if (unary !== undefined) {
        return answerWhenSettled(route, request, reply, call, requestFormat, result, unary)
      }
      return Promise.resolve(result).then((value) =>
        pending(respond(route, request, reply, call, requestFormat, value, stream)),
      )
    }
    const sent = respond(route, request, reply, call, requestFormat, result, stream)
    // Sent in this turn: Fastify needs nothing more (an async onSend hook finishes the reply itself),
    // except for a stream, which Fastify waits on.
    return definition.streaming ? pending(sent) : undefined
  }
}

/** The route's shape and hooks: body limit and strict body, HTTP/2 body deadline, compression. */
function routeOptions(
  fastify: FastifyInstance,
  definition: EndpointDefinition,
  ctx: HttpRouteContext,
  url: string,
  handler: EndpointHandler,
): RouteOptions {
  const hasBody = definition.http.hasBody
  return {
    method: definition.method,
    url,
    config: { trivium: definition },
    bodyLimit: definition.config.bodyLimit ?? ctx.bodyLimit,
    errorHandler: sendError,
    preParsing: hasBody ? strictBody : undefined,
    // HTTP/2 has no request timeout of Node's: a body still arriving at the deadline is answered then.
    onRequest: hasBody && fastify.initialConfig.http2 ? http2BodyDeadline(definition) : undefined,
    // Event streams are not compressed (each event must reach the client as it is written).
    onSend: ctx.compression && !definition.streaming ? compressionHook(ctx.compression) : undefined,
    handler,
  }
}

export function registerHttpRoute(
  fastify: FastifyInstance,
  definition: EndpointDefinition,
  ctx: HttpRouteContext,
  /** The URL within `fastify`'s prefix (`definition.url` is the full URL). */
  url: string = definition.url,
): void {
  if (definition.requestStream) {
    registerRequestStreamRoute(fastify, definition, ctx, url)
    return
  }
  const route: EndpointRoute = {
    definition,
    pipeline: ctx.pipeline,
    formats: ctx.formats,
    streams: ctx.streams,
    drain: ctx.drain,
    decodeJson: jsonDecoder(definition),
  }
  fastify.route(routeOptions(fastify, definition, ctx, url, endpointHandler(route)))
}
