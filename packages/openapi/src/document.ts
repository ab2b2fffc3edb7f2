// The OpenAPI 3.1 document of an endpoint registry. Pure: the plugin calls it at ready time, a build
// script can call it with the same registry to write the file.
import type { EndpointDefinition, Model } from '@trivium/core'
import {
  BINARY_CONTENT_TYPE,
  ERROR_KINDS,
  type ErrorKind,
  HTTP_CODINGS,
  INTERNAL_ERROR_MESSAGE,
  invalidTimeoutMessage,
  isNamedRoute,
  JSON_CONTENT_TYPE,
  namedRouteStream,
  TIMEOUT_HEADER,
} from '@trivium/core/internal'
import { COMPONENT_PREFIX, type RegisteredModel, type Schema, SchemaComponents } from './schemas.js'
import { SETUP } from './setup-errors.js'

declare module '@trivium/core' {
  interface TriviumEndpointConfig {
    /** Error statuses the handler itself can answer, documented beside the ones the plugins imply. */
    errorStatuses?: number[]
  }
}

export const JSON_MEDIA_TYPE = JSON_CONTENT_TYPE
export const BINARY_MEDIA_TYPE = BINARY_CONTENT_TYPE
export const SSE_MEDIA_TYPE = 'text/event-stream'

export interface OpenApiInfo {
  title: string
  version: string
  description?: string
}

export interface OpenApiServer {
  url: string
  description?: string
}

export interface BuildOptions {
  servers?: OpenApiServer[]
  /**
   * Document authentication (security schemes, per-endpoint `security`, 401 responses). Default true;
   * the plugin sets it to whether `@trivium/auth` is registered.
   */
  auth?: boolean
  /**
   * Document `application/x-platform-binary` for models that have a binary form. Default true; the
   * plugin sets it to whether the binary format (`@trivium/codec`) is registered.
   */
  binary?: boolean
  /**
   * Also document the token in the query parameter `token` (scheme `tokenQuery`) beside the bearer header.
   * Default true: @trivium/auth accepts it on every endpoint (for clients that cannot set headers, such as
   * EventSource), so the document says so; `false` leaves it out for services that keep tokens out of URLs
   * by other means (tokens in URLs end up in logs and histories).
   */
  tokenQuery?: boolean
}

/** The document: typed loosely, it is plain JSON. */
export interface OpenApiDocument {
  openapi: '3.1.0'
  info: OpenApiInfo
  servers?: OpenApiServer[]
  tags: { name: string; description?: string }[]
  paths: Record<string, Record<string, OpenApiOperation>>
  components: {
    schemas: Record<string, Schema>
    responses: Record<string, Schema>
    securitySchemes?: Record<string, Schema>
  }
  [extension: `x-${string}`]: unknown
}

export interface OpenApiOperation {
  operationId: string
  summary?: string
  description: string
  tags: string[]
  parameters?: Schema[]
  requestBody?: Schema
  responses: Record<string, Schema>
  security?: Record<string, string[]>[]
  'x-trivium-streaming': boolean
  'x-trivium-permissions'?: string[]
  'x-trivium-roles'?: string[]
  'x-trivium-rate-limit'?: unknown
  'x-trivium-auth'?: string
  [extension: `x-${string}`]: unknown
}

/** The one error body of PROTOCOL.md "Errors". */
export const ERROR_BODY_SCHEMA: Schema = {
  type: 'object',
  description: 'The Trivium error body, the same on every transport (PROTOCOL.md "Errors").',
  properties: {
    statusCode: { type: 'integer', description: 'HTTP status of the error' },
    code: { type: 'string', description: 'Stable error code, e.g. TRV_VALIDATION', pattern: '^TRV_[A-Z_]+$' },
    error: { type: 'string', description: 'Error kind, e.g. ValidationException' },
    message: { type: 'string' },
    requestId: {
      type: 'string',
      description: 'Fastify request id (HTTP) or `<connection>:<request id>` (frames)',
    },
    retryAfter: { type: 'integer', minimum: 0, description: 'Seconds to wait (rate limiting only)' },
    details: {
      type: 'array',
      description: 'Field errors of a validation error',
      items: {
        type: 'object',
        properties: { field: { type: 'string' }, message: { type: 'string' } },
        required: ['field', 'message'],
      },
    },
  },
  required: ['statusCode', 'code', 'error', 'message', 'requestId'],
}

const ERROR_REF = { $ref: `${COMPONENT_PREFIX}ErrorBody` }
const errorContent = { [JSON_MEDIA_TYPE]: { schema: ERROR_REF } }

/** `Kind (CODE)`, the code from the one table of kinds (@trivium/wire's ERROR_KINDS). */
function described(kind: ErrorKind): string {
  return `${kind} (${ERROR_KINDS[kind].code})`
}

/** A kind's HTTP status as a response key, from the same table. */
function statusOf(kind: ErrorKind): string {
  return String(ERROR_KINDS[kind].status)
}

/** The 406 of a call asking for a binary answer the response model has no form in (PROTOCOL.md "Errors"). */
const NOT_ACCEPTABLE = '406'

/** Shared error responses, by status (each the status of its kind in ERROR_KINDS). */
export const ERROR_RESPONSES: Readonly<Record<string, { name: string; response: Schema }>> = {
  [statusOf('ValidationException')]: {
    name: 'BadRequest',
    response: {
      description: `${described('ValidationException')}: the input fails a check or is malformed`,
      content: errorContent,
    },
  },
  [statusOf('UnauthorizedException')]: {
    name: 'Unauthorized',
    response: {
      description: `${described('UnauthorizedException')}: no token, or an invalid or revoked one; ${described('TokenExpiredException')}`,
      content: errorContent,
    },
  },
  [statusOf('ForbiddenException')]: {
    name: 'Forbidden',
    response: {
      description: `${described('ForbiddenException')}: a required permission or role is missing`,
      content: errorContent,
    },
  },
  [statusOf('NotFoundException')]: {
    name: 'NotFound',
    response: { description: described('NotFoundException'), content: errorContent },
  },
  // Not a kind's own status: core answers it for an `Accept` naming only the binary format (refuseAnswerFormat).
  [NOT_ACCEPTABLE]: {
    name: 'NotAcceptable',
    response: {
      description: `${described('UnsupportedMediaTypeException')}, status 406: \`Accept\` names ${BINARY_CONTENT_TYPE} and not JSON, and the response model has no binary form; message \`Endpoint <name> has no binary response format\``,
      content: errorContent,
    },
  },
  [statusOf('ConflictException')]: {
    name: 'Conflict',
    response: {
      description: `${described('ConflictException')}: the request contradicts what is stored (a name that already exists), or a call with the same Idempotency-Key is still being processed`,
      content: errorContent,
    },
  },
  [statusOf('PayloadTooLargeException')]: {
    name: 'PayloadTooLarge',
    response: {
      description: `${described('PayloadTooLargeException')}: the body is over the limit`,
      content: errorContent,
    },
  },
  [statusOf('UnsupportedMediaTypeException')]: {
    name: 'UnsupportedMediaType',
    response: {
      description: `${described('UnsupportedMediaTypeException')}: a Content-Type the endpoint cannot decode`,
      content: errorContent,
    },
  },
  [statusOf('UnprocessableContentException')]: {
    name: 'UnprocessableContent',
    response: {
      description: `${described('UnprocessableContentException')}: the Idempotency-Key was already used with another request body`,
      content: errorContent,
    },
  },
  [statusOf('RateLimitExceededException')]: {
    name: 'RateLimited',
    response: {
      description: `${described('RateLimitExceededException')}: over the limit; retry after \`retryAfter\` seconds`,
      headers: {
        'Retry-After': {
          description: 'Seconds until the window ends (equals `retryAfter` in the body)',
          schema: { type: 'integer', minimum: 0 },
        },
      },
      content: errorContent,
    },
  },
  [statusOf('InternalErrorException')]: {
    name: 'InternalError',
    response: {
      description: `${described('InternalErrorException')}: message is always \`${INTERNAL_ERROR_MESSAGE}\``,
      content: errorContent,
    },
  },
  [statusOf('ServiceUnavailableException')]: {
    name: 'ServiceUnavailable',
    response: {
      description: `${described('ServiceUnavailableException')}: a store the request needs (database, Redis) is unreachable`,
      content: errorContent,
    },
  },
  [statusOf('TimeoutException')]: {
    name: 'Timeout',
    response: {
      description: `${described('TimeoutException')}: the call's deadline (\`${TIMEOUT_HEADER}\`, or the endpoint's own) passed, message \`Deadline of <ms> ms exceeded\`; the client may not assume the call did not run (PROTOCOL.md "Deadlines")`,
      content: errorContent,
    },
  },
}

export const SECURITY_SCHEMES: Readonly<Record<string, Schema>> = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: '`Authorization: Bearer <token>` (checked first)',
  },
  tokenQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The same token in the query parameter `token`, when there is no Authorization header',
  },
}

const ROUTE_STREAM_DESCRIPTION =
  "Each NDJSON line (or each event's `data`, for Server-Sent Events) is one item as JSON (schema " +
  '`x-trivium-item-schema`); the stream ends when the route ends it.'

const SSE_DESCRIPTION =
  'Server-Sent Events. Each item is an event `item` whose data is the item as JSON (schema ' +
  '`x-trivium-item-schema`) and whose `id` counts from 0; a normal end is an event `end` with data `{}`; ' +
  'a failure is an event `error` whose data is the error body (`ErrorBody`).'

/** `/tasks/:id` → `/tasks/{id}`, segment by segment as core's HttpMapping splits it. */
export function toOpenApiPath(url: string): string {
  return url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? `{${segment.slice(1)}}` : segment))
    .join('/')
}

/** A query string cannot carry null: an optional field is absent instead. */
function withoutNull(schema: Schema): Schema {
  const t = schema.type
  if (!Array.isArray(t) || !t.includes('null')) return schema
  const rest = t.filter((x) => x !== 'null')
  return { ...schema, type: rest.length === 1 ? rest[0] : rest }
}

function nonNullType(schema: Schema): unknown {
  const t = schema.type
  return Array.isArray(t) ? t.find((x) => x !== 'null') : t
}

/** A field that core's mapping cannot carry in a query string (nested objects). */
function isNestedObject(schema: Schema): boolean {
  return nonNullType(schema) === 'object' || typeof schema.$ref === 'string'
}

function propertiesOf(schema: Schema): Record<string, Schema> {
  const props = schema.properties
  return typeof props === 'object' && props !== null ? (props as Record<string, Schema>) : {}
}

function requiredOf(schema: Schema): string[] {
  return Array.isArray(schema.required) ? (schema.required as string[]) : []
}

function nonEmptyStrings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.length > 0 ? value.map(String) : undefined
}

function tagOf(name: string): string {
  const dot = name.indexOf('.')
  return dot === -1 ? name : name.slice(0, dot)
}

function hasBinaryForm(model: Model, direction: 'request' | 'response'): boolean {
  return direction === 'request' ? typeof model.decode === 'function' : typeof model.encode === 'function'
}

/** Builds the OpenAPI 3.1 document of every endpoint of `registry` (or of a list of definitions). */
/** The header of endpoints with `idempotencyKey: true` (PROTOCOL.md "Idempotency keys"). */
const IDEMPOTENCY_KEY_PARAMETER: Schema = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'A unique key (e.g. a UUID), sent again with every retry of this call: a retry with the same key and body gets the first answer instead of running again (409 while the first still runs, 422 with another body)',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
}

/** The client's deadline (PROTOCOL.md "Deadlines"), accepted on every endpoint. */
const TIMEOUT_PARAMETER: Schema = {
  name: TIMEOUT_HEADER,
  in: 'header',
  required: false,
  description: `The call's deadline in milliseconds: when it passes the call stops and the answer is ${statusOf('TimeoutException')} (a stream ends with the error event). An invalid value is ${statusOf('ValidationException')} \`${invalidTimeoutMessage('header')}\``,
  schema: { type: 'string', pattern: '^[1-9][0-9]{0,9}$' },
}

/** Request bodies may be compressed (PROTOCOL.md "Compression"). */
const CONTENT_ENCODING_PARAMETER: Schema = {
  name: 'Content-Encoding',
  in: 'header',
  required: false,
  description:
    'A compressed request body (one coding). Another coding, or several, is 415 `Unsupported Content-Encoding: <value> (accepted: …)`; bytes that are not valid data of the coding are 400; a body that inflates past the body limit is 413 (the limit applies to the inflated size)',
  schema: { type: 'string', enum: [...HTTP_CODINGS, 'x-gzip', 'identity'] },
}

/** What the operation of a client or bidirectional stream says (HTTP/1.1 refuses every call; HTTP/2 takes envelopes). */
function describeRequestStream(endpoint: EndpointDefinition): string {
  return (
    `Trivium ${endpoint.streaming ? 'bidirectional' : 'client'} stream \`${endpoint.name}\`: a stream of ` +
    `\`${endpoint.request.name}\` items answered by ${endpoint.streaming ? 'a stream of' : 'one'} ` +
    `\`${endpoint.response.name}\`. HTTP/1.1 cannot carry a stream of requests, so over HTTP/1.1 this route ` +
    `refuses every call with 400 \`Endpoint ${endpoint.name} takes a stream of requests: call it over WebSocket or TCP\`. ` +
    'Over HTTP/2 (a server started with HTTP/2) the request body is the stream of items in envelopes ' +
    '(`Content-Type: application/trivium-stream+json` or `+binary`; 1 flags byte, a 4-byte big-endian length, ' +
    'the item), ended by the end of the body. ' +
    'Over WebSocket and TCP: a REQUEST frame to the name, CLIENT_ITEM frames, then CLIENT_END ' +
    '(PROTOCOL.md "Client and bidirectional streams").'
  )
}

export function buildOpenApi(
  registry: { list(): readonly EndpointDefinition[] } | readonly EndpointDefinition[],
  info: OpenApiInfo,
  options: BuildOptions = {},
): OpenApiDocument {
  const endpoints = 'list' in registry ? registry.list() : registry
  const auth = options.auth ?? true
  const binary = options.binary ?? true
  const schemes = (options.tokenQuery ?? true) ? ['bearerAuth', 'tokenQuery'] : ['bearerAuth']
  const requiredSecurity = schemes.map((scheme) => ({ [scheme]: [] }))
  const settings = { auth, binary, requiredSecurity, optionalSecurity: [{}, ...requiredSecurity] }
  const components = new SchemaComponents({ ErrorBody: ERROR_BODY_SCHEMA })
  const paths: OpenApiDocument['paths'] = {}
  const tags = new Set<string>()
  const usedResponses = new Set<string>()

  for (const endpoint of endpoints) {
    // A stream of requests is reachable over WebSocket, TCP and HTTP/2: over HTTP/1.1 its route refuses
    // every call with 400 before anything else runs (PROTOCOL.md "Client and bidirectional streams").
    if (endpoint.requestStream) {
      const tag = tagOf(endpoint.name)
      tags.add(tag)
      components.add(endpoint.request)
      components.add(endpoint.response)
      usedResponses.add(statusOf('ValidationException'))
      const path = toOpenApiPath(endpoint.url)
      paths[path] = { ...paths[path], [endpoint.method.toLowerCase()]: requestStreamOperation(endpoint, tag) }
      continue
    }
    const operation = endpointOperation(endpoint, components, usedResponses, settings)
    tags.add(tagOf(endpoint.name))
    const path = toOpenApiPath(endpoint.url)
    const operations = paths[path] ?? {}
    operations[endpoint.method.toLowerCase()] = operation
    paths[path] = operations
  }

  const responses: Record<string, Schema> = {}
  for (const [status, { name, response }] of Object.entries(ERROR_RESPONSES)) {
    if (usedResponses.has(status)) responses[name] = response
  }
  const document: OpenApiDocument = {
    openapi: '3.1.0',
    info: {
      ...info,
      description:
        (info.description ? `${info.description}\n\n` : '') +
        'Every operation is a Trivium endpoint: the same endpoint is reachable over WebSocket and TCP ' +
        'by its name (the operationId), with the same request and response models.',
    },
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: { schemas: components.schemas, responses },
  }
  if (options.servers && options.servers.length > 0) document.servers = options.servers.map((s) => ({ ...s }))
  if (auth)
    document.components.securitySchemes = Object.fromEntries(
      Object.entries(SECURITY_SCHEMES).filter(([name]) => schemes.includes(name)),
    )
  // Plain JSON: no shared objects between operations, so callers may edit the result freely.
  return JSON.parse(JSON.stringify(document)) as OpenApiDocument
}

/** How buildOpenApi documents every operation. */
interface OperationSettings {
  auth: boolean
  binary: boolean
  requiredSecurity: Record<string, string[]>[]
  optionalSecurity: Record<string, string[]>[]
}

/** The operation of an endpoint (not a stream of requests); its error responses go in `usedResponses`. */
function endpointOperation(
  endpoint: EndpointDefinition,
  components: SchemaComponents,
  usedResponses: Set<string>,
  { auth, binary, requiredSecurity, optionalSecurity }: OperationSettings,
): OpenApiOperation {
  // Read as plain data: settings of packages this one does not import (auth, permissions, …) included.
  const config: Readonly<Record<string, unknown>> = { ...endpoint.config }
  const request = components.add(endpoint.request)
  const response = components.add(endpoint.response)
  const requestProps = propertiesOf(request.schema)
  const tag = tagOf(endpoint.name)

  const parameters = parametersOf(endpoint, config, request.schema, requestProps)

  // Keys in the order a reader expects them.
  const operation = { operationId: endpoint.name } as OpenApiOperation
  if (typeof config.summary === 'string') operation.summary = config.summary
  operation.description = describe(endpoint)
  operation.tags = [tag]
  if (parameters.length > 0) operation.parameters = parameters

  if (endpoint.http.hasBody) operation.requestBody = requestBodyOf(endpoint, request, requestProps, binary)

  operation.responses = {}
  const [successStatus, success] = successResponse(endpoint, response.ref, binary)
  operation.responses[successStatus] = success

  const mode = typeof config.auth === 'string' ? config.auth : 'required'
  const permissions = nonEmptyStrings(config.permissions)
  const roles = nonEmptyStrings(config.roles)
  const rights = Boolean(permissions || roles)
  const errors = errorStatusesOf(endpoint, config, auth && mode !== 'public', rights, binary)
  // In ascending status order (integer-like keys), as the list sorted.
  for (const [status, shared] of Object.entries(ERROR_RESPONSES)) {
    if (!errors.includes(status)) continue
    usedResponses.add(status)
    operation.responses[status] = { $ref: `#/components/responses/${shared.name}` }
  }

  if (auth) {
    operation.security = mode === 'public' ? [] : mode === 'optional' ? optionalSecurity : requiredSecurity
    operation['x-trivium-auth'] = mode
  }
  operation['x-trivium-streaming'] = endpoint.streaming
  if (permissions) operation['x-trivium-permissions'] = permissions
  if (roles) operation['x-trivium-roles'] = roles
  if (config.rateLimit !== undefined) operation['x-trivium-rate-limit'] = config.rateLimit
  return operation
}

/** An endpoint taking a stream of requests: described, not callable over HTTP/1.1 (400). */
function requestStreamOperation(endpoint: EndpointDefinition, tag: string): OpenApiOperation {
  return {
    operationId: endpoint.name,
    description: describeRequestStream(endpoint),
    tags: [tag],
    responses: { [statusOf('ValidationException')]: { $ref: '#/components/responses/BadRequest' } },
    'x-trivium-streaming': endpoint.streaming,
    'x-trivium-request-stream': true,
  }
}

/** Path parameters, query parameters (no body), then the headers an endpoint reads. */
function parametersOf(
  endpoint: EndpointDefinition,
  config: Readonly<Record<string, unknown>>,
  requestSchema: Schema,
  requestProps: Record<string, Schema>,
): Schema[] {
  const pathParams = endpoint.http.pathParams
  const parameters: Schema[] = pathParams.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: requestProps[name] ?? { type: 'string' },
  }))
  if (!endpoint.http.hasBody) {
    const required = new Set(requiredOf(requestSchema))
    for (const [name, schema] of Object.entries(requestProps)) {
      if (pathParams.includes(name) || isNestedObject(schema)) continue
      const parameter: Schema = {
        name,
        in: 'query',
        required: required.has(name),
        schema: withoutNull(schema),
      }
      if (nonNullType(schema) === 'array') Object.assign(parameter, { style: 'form', explode: true })
      parameters.push(parameter)
    }
  }

  if (config.idempotencyKey === true) parameters.push(IDEMPOTENCY_KEY_PARAMETER)
  parameters.push(TIMEOUT_PARAMETER)
  if (endpoint.http.hasBody) parameters.push(CONTENT_ENCODING_PARAMETER)
  return parameters
}

/** JSON: the body carries every field but the path parameters; binary: the whole model. */
function requestBodyOf(
  endpoint: EndpointDefinition,
  request: RegisteredModel,
  requestProps: Record<string, Schema>,
  binary: boolean,
): OpenApiOperation['requestBody'] {
  const pathParams = endpoint.http.pathParams
  let jsonBody: Schema = request.ref
  let bodyRequired = requiredOf(request.schema).length > 0
  if (pathParams.length > 0 && Object.keys(requestProps).length > 0) {
    const properties = Object.fromEntries(
      Object.entries(requestProps).filter(([k]) => !pathParams.includes(k)),
    )
    const required = requiredOf(request.schema).filter((k) => !pathParams.includes(k))
    jsonBody = { ...request.schema, properties }
    if (required.length > 0) jsonBody.required = required
    else delete jsonBody.required
    bodyRequired = required.length > 0
  }
  const content: Schema = { [JSON_MEDIA_TYPE]: { schema: jsonBody } }
  if (binary && hasBinaryForm(endpoint.request, 'request'))
    content[BINARY_MEDIA_TYPE] = binaryMedia(endpoint.request)
  return { required: bodyRequired, content }
}

/** A model's binary form as a media type of a body. */
function binaryMedia(model: Model): Schema {
  return { schema: { type: 'string', format: 'binary', description: `${model.name} in the binary format` } }
}

/** The success answer: a named route's own stream, the stream of items (SSE), or the response model as JSON (and binary). */
function successResponse(
  endpoint: EndpointDefinition,
  responseRef: Schema,
  binary: boolean,
): [string, Schema] {
  const routeStream = namedRouteStream(endpoint)
  if (routeStream !== undefined) {
    // A streaming named route answers HTTP in its own stream type: one item per line or event.
    const content = {
      [routeStream]: {
        schema: { type: 'string', description: ROUTE_STREAM_DESCRIPTION },
        'x-trivium-item-schema': responseRef,
      },
    }
    return [
      String(endpoint.status),
      { description: `A stream of response items (${routeStream}, written by the route)`, content },
    ]
  }
  if (endpoint.streaming) {
    const content = {
      [SSE_MEDIA_TYPE]: {
        schema: { type: 'string', description: SSE_DESCRIPTION },
        'x-trivium-item-schema': responseRef,
      },
    }
    return ['200', { description: 'A stream of response items (Server-Sent Events)', content }]
  }
  const content: Schema = { [JSON_MEDIA_TYPE]: { schema: responseRef } }
  if (binary && hasBinaryForm(endpoint.response, 'response'))
    content[BINARY_MEDIA_TYPE] = binaryMedia(endpoint.response)
  return [String(endpoint.status), { description: 'Success', content }]
}

/**
 * Whether the endpoint's HTTP route answers 406 to an `Accept` naming only the binary format: core's own
 * route of a unary endpoint whose response model has no binary form (a named route is the app's own
 * Fastify route, which never answers it; a stream's answer is Server-Sent Events whatever the `Accept`).
 */
function refusesBinaryAnswer(endpoint: EndpointDefinition): boolean {
  return !endpoint.streaming && !isNamedRoute(endpoint) && !hasBinaryForm(endpoint.response, 'response')
}

/** The error statuses an endpoint can answer, from its settings (`binary`: the binary format is documented). */
function errorStatusesOf(
  endpoint: EndpointDefinition,
  config: Readonly<Record<string, unknown>>,
  authenticates: boolean,
  checksRights: boolean,
  binary: boolean,
): string[] {
  const kinds: ErrorKind[] = ['ValidationException']
  if (authenticates) kinds.push('UnauthorizedException')
  if (checksRights) kinds.push('ForbiddenException')
  kinds.push('NotFoundException')
  if (endpoint.http.hasBody) kinds.push('PayloadTooLargeException', 'UnsupportedMediaTypeException')
  if (config.idempotencyKey === true) kinds.push('ConflictException', 'UnprocessableContentException')
  if (config.rateLimit !== false) kinds.push('RateLimitExceededException')
  kinds.push('InternalErrorException', 'ServiceUnavailableException', 'TimeoutException')
  const errors = kinds.map(statusOf)
  if (binary && refusesBinaryAnswer(endpoint)) errors.push(NOT_ACCEPTABLE)
  // Statuses only the handler knows (a public login answers 401 to bad credentials).
  for (const status of errorStatuses(config.errorStatuses, endpoint.name)) {
    if (!errors.includes(status)) errors.push(status)
  }
  return errors
}

function describe(endpoint: EndpointDefinition): string {
  const lines = [
    `Trivium endpoint \`${endpoint.name}\`: also reachable over WebSocket and TCP as a REQUEST frame ` +
      `to \`${endpoint.name}\` with the same models (request \`${endpoint.request.name}\`, ` +
      `${endpoint.streaming ? 'items' : 'response'} \`${endpoint.response.name}\`).`,
  ]
  if (namedRouteStream(endpoint) !== undefined) {
    lines.push(
      `Streaming: over HTTP the route answers \`${namedRouteStream(endpoint)}\` (one item per line or ` +
        'event); over WebSocket and TCP, STREAM_ITEM frames then STREAM_END.',
    )
  } else if (endpoint.streaming) {
    lines.push(
      'Streaming: over HTTP the answer is `text/event-stream` (events `item`, `end`, `error`); over ' +
        'WebSocket and TCP, STREAM_ITEM frames then STREAM_END.',
    )
  }
  return lines.join('\n\n')
}

/** The `errorStatuses` of an endpoint's config as keys of ERROR_RESPONSES (anything else is refused). */
function errorStatuses(value: unknown, endpoint: string): string[] {
  if (value === undefined) return []
  const statuses = Array.isArray(value) ? value.map(String) : []
  // The 406 is core's own answer (documented where it applies), not one a handler declares.
  const known = Object.keys(ERROR_RESPONSES).filter((s) => s !== NOT_ACCEPTABLE)
  if (!Array.isArray(value) || statuses.some((s) => !known.includes(s))) {
    throw SETUP.TRV_OPENAPI_ERROR_STATUSES(endpoint, known.join(', '))
  }
  return statuses
}
