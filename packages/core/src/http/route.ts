// The HTTP transport adapter: one Fastify route per endpoint. Fastify receives the request; this
// file is the parser (Fastify request → common request form) and the sender (value → reply).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { TriviumCall } from '../call.js'
import { httpCredential } from '../credential.js'
import { UnsupportedMediaTypeException, ValidationException } from '../errors.js'
import { decodePayload, type FormatRegistry, jsonFormat, type WireFormat } from '../formats.js'
import type { Pipeline } from '../middleware.js'
import type { EndpointDefinition } from '../registry.js'
import { routeToHandler } from '../router.js'
import { sendError } from './error-reply.js'
import { sendEventStream } from './sse.js'
import { strictBody } from './strict-body.js'
import { CALL, TRANSPORT_OVERRIDE, type TransportOverride } from './symbols.js'

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
}

/** Decodes the request model from path, query and body, by the registry's HTTP mapping. */
function bodyDecoder(
  definition: EndpointDefinition,
  request: FastifyRequest,
  format: WireFormat | undefined,
): () => unknown {
  const mapping = definition.http
  const model = definition.request
  const params = request.params as Record<string, string> | undefined
  if (!mapping.hasBody || format === undefined || format === jsonFormat) {
    return () =>
      model.fromJSON(
        mapping.fromHttp(
          params,
          request.query as Record<string, unknown>,
          mapping.hasBody ? request.body : undefined,
        ),
      )
  }
  return () => {
    const raw = request.body
    if (!(raw instanceof Uint8Array)) throw new ValidationException('Request body is missing')
    if (raw.length > 0 && format.name !== 'json' && !model.decode) {
      throw new UnsupportedMediaTypeException(
        `Endpoint ${definition.name} has no ${format.name} request format`,
      )
    }
    const value = decodePayload(format, model, raw)
    if (mapping.pathParams.length === 0) return value
    return model.fromJSON(mapping.withPathParams(model.toJSON(value), params))
  }
}

function lazyAbortSignal(reply: FastifyReply): () => AbortSignal {
  return () => {
    const controller = new AbortController()
    // The response's `close` (not the request's: that fires once the body is read) tells that the
    // client went away before the answer was written.
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort(new Error('client closed the request'))
    })
    return controller.signal
  }
}

export function registerHttpRoute(
  fastify: FastifyInstance,
  definition: EndpointDefinition,
  ctx: HttpRouteContext,
  /** The URL within `fastify`'s prefix (`definition.url` is the full URL). */
  url: string = definition.url,
): void {
  const { pipeline, formats } = ctx
  const mapping = definition.http

  async function handler(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    let requestFormat: WireFormat | undefined
    if (mapping.hasBody && request.body !== undefined) {
      requestFormat = formats.forContentType(request.headers['content-type'])
      // Fastify parses text/plain too; an endpoint only takes the formats it can decode.
      if (!requestFormat) throw new UnsupportedMediaTypeException('Unsupported Content-Type')
    }
    const transport = (request as unknown as Record<symbol, TransportOverride | undefined>)[
      TRANSPORT_OVERRIDE
    ]
    const call = new TriviumCall({
      definition,
      protocol: transport?.protocol ?? 'http',
      metadata: transport?.metadata,
      connection: transport?.connection,
      requestId: request.id,
      log: request.log,
      headers: request.headers,
      method: request.method,
      query: request.query as Record<string, unknown>,
      clientIp: transport ? transport.clientIp : request.ip,
      raw: request,
      credential: transport
        ? undefined
        : () => httpCredential(request.headers, request.query as Record<string, unknown>),
      decodeBody: bodyDecoder(definition, request, requestFormat),
      signal: lazyAbortSignal(reply),
    })
    ;(request as unknown as Record<symbol, unknown>)[CALL] = call
    const result = await pipeline.run(call, routeToHandler)
    if (call.responseHeaders) reply.headers(call.responseHeaders)
    if (definition.streaming) {
      return sendEventStream(request, reply, definition, jsonFormat, result as AsyncIterable<unknown>)
    }
    let responseFormat = formats.forAccept(request.headers.accept, requestFormat)
    if (responseFormat !== jsonFormat && !definition.response.encode) responseFormat = jsonFormat
    const payload = responseFormat.encode(definition.response, result)
    return reply
      .code(definition.status)
      .type(responseFormat === jsonFormat ? 'application/json; charset=utf-8' : responseFormat.contentType)
      .send(
        typeof payload === 'string'
          ? payload
          : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      )
  }

  fastify.route({
    method: definition.method,
    url,
    config: { trivium: definition },
    bodyLimit: definition.config.bodyLimit ?? ctx.bodyLimit,
    errorHandler: sendError,
    preParsing: mapping.hasBody ? strictBody : undefined,
    handler,
  })
}
