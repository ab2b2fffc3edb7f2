// A Fastify route named in `config.triviumRoute.name` is also an endpoint (PROTOCOL.md "Named routes"):
// its name is in the registry, so frame transports find it, the client and OpenAPI describe it, and a
// clash with an endpoint is refused at start. Its request model is the route's `schema.params`,
// `querystring` and `body` merged into one object (the HTTP mapping's one rule splits it again); its
// response model is `schema.response[2xx]`. A frame call to it is never run by core's pipeline: the frame
// transports hand it to the route itself (`fastify.routing`), so the route's hooks and its guard run as
// for an HTTP request. What a frame cannot carry is refused here, at start, naming the fix.
import type { RouteOptions } from 'fastify'
import { InternalErrorException } from './errors.js'
import { type JsonSchema, jsonSchemaModel, type Model } from './model.js'
import { type EndpointDefinition, type EndpointRegistry, HTTP_METHODS, type HttpMethod } from './registry.js'

/** Thrown at start for a named route a frame cannot reach; the message is the one line with the fix. */
export class NamedRouteError extends Error {
  readonly code = 'TRV_NAMED_ROUTE'
  constructor(label: string, message: string) {
    super(`@trivium/core: ${label}: ${message}`)
    this.name = 'NamedRouteError'
  }
}

const JSON_TYPES = new Set(['application/json'])

function objectSchema(schema: unknown): JsonSchema | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined
  return schema as JsonSchema
}

function isObjectSchema(schema: JsonSchema): boolean {
  return schema.type === 'object' || (schema.type === undefined && schema.properties !== undefined)
}

/** `orders.create` → `OrdersCreate` (model names appear in error messages and OpenAPI components). */
function modelBase(name: string): string {
  return name
    .split(/[.\-_]/)
    .filter((s) => s.length > 0)
    .map((s) => s[0]!.toUpperCase() + s.slice(1))
    .join('')
}

/** The one request object: path params, query and body fields side by side. */
function mergedRequestSchema(label: string, parts: (JsonSchema | undefined)[]): JsonSchema | undefined {
  const present = parts.filter((p): p is JsonSchema => p !== undefined)
  if (present.length === 0) return undefined
  const properties: Record<string, JsonSchema> = {}
  const required = new Set<string>()
  let closed = false
  for (const part of present) {
    if (!isObjectSchema(part)) {
      throw new NamedRouteError(
        label,
        'a request schema that is not an object (a list or scalar body) cannot be split into path, query and body fields: give the route an object body, or leave it unnamed',
      )
    }
    for (const [field, schema] of Object.entries(part.properties ?? {})) {
      if (field in properties) {
        throw new NamedRouteError(
          label,
          `field "${field}" is declared in two of params, querystring and body: a frame payload names each field once; rename one`,
        )
      }
      properties[field] = schema
    }
    for (const field of part.required ?? []) required.add(field)
    if (part.additionalProperties === false) closed = true
  }
  const schema: JsonSchema = { type: 'object', properties }
  if (required.size > 0) schema.required = [...required]
  if (closed) schema.additionalProperties = false
  return schema
}

/** The answer forms a frame can carry besides one JSON value: a stream of JSON items. */
const STREAM_TYPES = new Set(['application/x-ndjson', 'text/event-stream'])

interface SuccessAnswer {
  status: number
  /** The JSON body's schema, or one item's for a stream. */
  schema: JsonSchema | undefined
  /** The stream's content type (`application/x-ndjson`, `text/event-stream`); undefined: one JSON body. */
  stream: string | undefined
}

/** The route's 2xx answer: its status and schema (Fastify's `response` keys: `200`, `2xx`, …, or `content`). */
function successResponse(label: string, response: unknown): SuccessAnswer {
  const table = objectSchema(response)
  if (table === undefined) return { status: 200, schema: undefined, stream: undefined }
  for (const [key, value] of Object.entries(table)) {
    if (!/^2(\d\d|xx)$/i.test(key)) continue
    const status = /^\d+$/.test(key) ? Number(key) : 200
    const schema = objectSchema(value)
    const content = schema?.content
    if (typeof content === 'object' && content !== null)
      return contentAnswer(label, status, content as Record<string, { schema?: unknown }>)
    return { status, schema, stream: undefined }
  }
  return { status: 200, schema: undefined, stream: undefined }
}

/** A 2xx answer declared per content type: one JSON body, or one stream of JSON items; nothing else. */
function contentAnswer(
  label: string,
  status: number,
  content: Record<string, { schema?: unknown }>,
): SuccessAnswer {
  const types = Object.keys(content)
  if (types.length === 0) return { status, schema: undefined, stream: undefined }
  const streams = types.filter((type) => STREAM_TYPES.has(type.toLowerCase()))
  const json = types.find((type) => JSON_TYPES.has(type.toLowerCase()))
  if (streams.length + (json === undefined ? 0 : 1) > 1) {
    throw new NamedRouteError(
      label,
      `its ${status} response declares ${[...(json === undefined ? [] : [json]), ...streams].join(' and ')}: a frame call has one answer form (a JSON body, or a stream of JSON items); declare one of them, or leave the route unnamed`,
    )
  }
  const stream = streams[0]
  if (stream !== undefined) {
    const item = objectSchema(content[stream]?.schema)
    if (item === undefined) {
      throw new NamedRouteError(
        label,
        `its ${stream} response has no item schema: declare content['${stream}'].schema (the schema of one item) so that frames carry its items as a stream, or leave the route unnamed`,
      )
    }
    return { status, schema: item, stream: stream.toLowerCase() }
  }
  if (json === undefined) {
    throw new NamedRouteError(
      label,
      `it answers ${types.join(', ')}: frames carry a JSON body or a stream of JSON items (text, files and binary bodies cannot be mapped); declare content['application/json'] or content['application/x-ndjson'] with a schema, or leave the route unnamed`,
    )
  }
  return { status, schema: objectSchema(content[json]?.schema), stream: undefined }
}

/** A response model that only describes (the route's own serializer already shaped the bytes). */
function describingModel(name: string, schema: JsonSchema | undefined): Model {
  return {
    name,
    ...(schema === undefined ? {} : { jsonSchema: schema }),
    fromJSON: (json: unknown) => json,
    toJSON: (value: unknown) => value,
  }
}

function compiledModel(
  label: string,
  part: 'request' | 'item',
  name: string,
  schema: JsonSchema | undefined,
): Model | undefined {
  if (schema === undefined) return undefined
  try {
    return jsonSchemaModel(name, schema)
  } catch (err) {
    throw new NamedRouteError(
      label,
      `its ${part} schema does not compile on its own (${(err as Error).message}): a shared schema ($ref to app.addSchema) cannot be resolved for frames; inline it, or leave the route unnamed`,
    )
  }
}

/** What a frame cannot carry, found in the route's declaration (the rest is PROTOCOL.md "Named routes"). */
function checkMappable(label: string, route: RouteOptions, method: string): HttpMethod {
  if (!HTTP_METHODS.includes(method as HttpMethod)) {
    throw new NamedRouteError(
      label,
      `a named route's method must be one of ${HTTP_METHODS.join(', ')} (the HTTP mapping's methods): give it one of those, or leave the route unnamed`,
    )
  }
  if (route.url.includes('*')) {
    throw new NamedRouteError(
      label,
      'a wildcard path (*) has no field a frame payload can fill: use named path parameters (/:id), or leave the route unnamed',
    )
  }
  const consumes = (route.schema as { consumes?: unknown } | undefined)?.consumes
  if (Array.isArray(consumes) && consumes.some((type) => !JSON_TYPES.has(String(type)))) {
    throw new NamedRouteError(
      label,
      `it consumes ${consumes.join(', ')}: frames carry JSON (multipart and other bodies cannot be mapped); leave the route unnamed`,
    )
  }
  return method as HttpMethod
}

/**
 * Adds the endpoint of a route whose `config.triviumRoute.name` is `name`. Throws NamedRouteError (or the
 * registry's RegistrationError: an invalid or taken name) so that the app refuses to start.
 */
export function addNamedRoute(
  registry: EndpointRegistry,
  route: RouteOptions,
  name: string,
  rules: object,
): EndpointDefinition {
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const label = `route ${methods.join(',')} ${route.url} (config.triviumRoute.name "${name}")`
  if (methods.length !== 1) {
    throw new NamedRouteError(
      label,
      'a named route has one method (a name calls one route): register one route per method, each with its own name',
    )
  }
  const method = checkMappable(label, route, String(methods[0]).toUpperCase())
  const schema = (route.schema ?? {}) as Record<string, unknown>
  const querystring = objectSchema(schema.querystring ?? schema.query)
  if ((method === 'POST' || method === 'PUT') && querystring !== undefined) {
    throw new NamedRouteError(
      label,
      "a POST or PUT route's query fields cannot be told from its body fields in a frame payload (HTTP mapping: every field not in the path is the body): move them into the body schema, or leave the route unnamed",
    )
  }
  const base = modelBase(name)
  const merged = mergedRequestSchema(label, [
    objectSchema(schema.params),
    querystring,
    objectSchema(schema.body),
  ])
  const answer = successResponse(label, schema.response)
  if (answer.stream !== undefined && method !== 'GET' && method !== 'POST') {
    throw new NamedRouteError(
      label,
      `a streaming route (${answer.stream}) is called with GET or POST, as a stream endpoint is: change its method, or leave the route unnamed`,
    )
  }
  const request = compiledModel(label, 'request', `${base}Request`, merged)
  // A stream's items are checked one by one as the route writes them (the route's serializer never sees them).
  const response =
    answer.stream === undefined
      ? describingModel(`${base}Response`, answer.schema)
      : (compiledModel(label, 'item', `${base}Response`, answer.schema) as Model)
  const definition = registry.add(
    name,
    {
      ...(rules as object),
      method,
      url: route.url,
      status: answer.status,
      ...(request === undefined ? {} : { request }),
      response,
      ...(typeof schema.summary === 'string' ? { summary: schema.summary } : {}),
    },
    () => {
      // Never reached: frame transports hand a named route's calls to the route itself.
      throw new InternalErrorException(`Endpoint ${name} is served by its Fastify route`)
    },
    // The handler is never called either way; the shape tells frame transports how to answer.
    { streaming: answer.stream !== undefined, requestStream: false } as {
      streaming: false
      requestStream: false
    },
  )
  NAMED_ROUTES.set(definition, answer.stream)
  return definition as EndpointDefinition
}

/** Every named route's endpoint, with its stream's content type (undefined: one JSON answer). */
const NAMED_ROUTES = new WeakMap<object, string | undefined>()

/** The content type a streaming named route answers (`application/x-ndjson`, `text/event-stream`). */
export function namedRouteStream(definition: object): string | undefined {
  return NAMED_ROUTES.get(definition)
}

/** True for the endpoint of a named Fastify route: its calls go through the route (`fastify.routing`). */
export function isNamedRoute(definition: object): boolean {
  return NAMED_ROUTES.has(definition)
}
