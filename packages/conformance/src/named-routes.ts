// Named Fastify routes of the conformance app (issue 41, PROTOCOL.md "Named routes"): plain Fastify routes
// with a schema and `config.triviumRoute.name`, so each is also an endpoint, called by name on every
// frame transport (through the route and its hooks) and by its method and URL over HTTP. Kept apart from
// the generated endpoints (and from other helpers' additions to the case table).
import { triviumUser } from '@trivium/auth'
import type { EndpointSpec } from '@trivium/client'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type UnaryCase, unaryCases } from './cases.js'

/** What a route's own hook saw (set by its preHandler, returned by its handler). */
const HOOKED = new WeakSet<FastifyRequest>()

const shopParams = {
  type: 'object',
  properties: { shop: { type: 'string', minLength: 1, maxLength: 32 } },
  required: ['shop'],
} as const

export const orderBody = {
  type: 'object',
  properties: {
    item: { type: 'string', minLength: 1, maxLength: 64 },
    quantity: { type: 'integer', minimum: 1, maximum: 1000 },
  },
  required: ['item', 'quantity'],
  additionalProperties: false,
} as const

const orderResponse = {
  type: 'object',
  properties: {
    shop: { type: 'string' },
    item: { type: 'string' },
    quantity: { type: 'integer' },
    authenticated: { type: 'boolean' },
    hooked: { type: 'boolean' },
  },
} as const

/** Registers the named routes (after @trivium/core and @trivium/auth, as every guarded route). */
export function registerNamedRoutes(app: FastifyInstance): void {
  app.post(
    '/named/shops/:shop/orders',
    {
      schema: { params: shopParams, body: orderBody, response: { 201: orderResponse } },
      config: { triviumRoute: { name: 'orders.create', auth: 'required' } },
      // The route's own hook: runs for HTTP requests and for frames alike.
      preHandler: (request, _reply, done) => {
        HOOKED.add(request)
        done()
      },
    },
    async (request, reply) => {
      const { shop } = request.params as { shop: string }
      const { item, quantity } = request.body as { item: string; quantity: number }
      reply.code(201)
      return {
        shop,
        item,
        quantity,
        authenticated: triviumUser(request) !== undefined,
        hooked: HOOKED.has(request),
      }
    },
  )
  // Trivium's rate limit, declared on the route: enforced by the guard on every transport.
  app.post(
    '/named/limited',
    {
      config: {
        triviumRoute: {
          name: 'orders.limited',
          auth: 'required',
          rateLimit: { requests: 2, windowMs: 60_000 },
        },
      },
    },
    async () => ({ ok: true }),
  )
  app.get(
    '/named/shops/:shop/orders',
    {
      schema: {
        params: shopParams,
        querystring: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 50 } },
        },
        response: {
          200: { type: 'object', properties: { shop: { type: 'string' }, limit: { type: 'integer' } } },
        },
      },
      config: { triviumRoute: { name: 'orders.list', auth: 'public' } },
    },
    async (request) => {
      const { shop } = request.params as { shop: string }
      const { limit } = request.query as { limit?: number }
      return { shop, limit: limit ?? 10 }
    },
  )
}

const json = { fromJSON: (value: unknown) => value, toJSON: (value: unknown) => value }

/** The client's table entries of the named routes (JSON models: the routes have no binary form). */
export const namedRouteEndpoints: Record<string, EndpointSpec> = {
  'orders.create': {
    name: 'orders.create',
    method: 'POST',
    url: '/named/shops/:shop/orders',
    status: 201,
    request: { name: 'OrdersCreateRequest', ...json },
    response: { name: 'OrdersCreateResponse', ...json },
    streaming: false,
  },
  'orders.limited': {
    name: 'orders.limited',
    method: 'POST',
    url: '/named/limited',
    request: { name: 'OrdersLimitedRequest', ...json },
    response: { name: 'OrdersLimitedResponse', ...json },
    streaming: false,
  },
  'orders.list': {
    name: 'orders.list',
    method: 'GET',
    url: '/named/shops/:shop/orders',
    request: { name: 'OrdersListRequest', ...json },
    response: { name: 'OrdersListResponse', ...json },
    streaming: false,
  },
}

const JSON_ONLY: ('json' | 'binary')[] = ['json']

/** The named routes' cases: every transport must answer each alike (JSON: the routes have no binary form). */
export const namedRouteCases: UnaryCase[] = [
  {
    name: 'named route: called by name, through its own hooks and guard',
    endpoint: 'orders.create',
    token: 'member',
    request: { shop: 'corner', item: 'tea', quantity: 2 },
    expect: { value: { shop: 'corner', item: 'tea', quantity: 2, authenticated: true, hooked: true } },
    formats: JSON_ONLY,
  },
  {
    name: 'named route: its guard refuses a call without a token',
    endpoint: 'orders.create',
    token: 'none',
    request: { shop: 'corner', item: 'tea', quantity: 2 },
    expect: {
      error: { kind: 'UnauthorizedException', code: 'TRV_UNAUTHORIZED', message: 'Authentication required' },
    },
    formats: JSON_ONLY,
  },
  {
    name: 'named route: a body its schema refuses is a validation error',
    endpoint: 'orders.create',
    token: 'member',
    request: { shop: 'corner', item: 'tea', quantity: 0 },
    expect: { error: { kind: 'ValidationException', code: 'TRV_VALIDATION' } },
    note: "HTTP answers as the route always did (Fastify's message); frames name the model, with details",
    formats: JSON_ONLY,
  },
  {
    name: "named route: Trivium's rate limit declared on the route, after 2 calls",
    endpoint: 'orders.limited',
    token: 'member',
    request: {},
    warmup: 2,
    // The same answer as the `limited` endpoint's case: one rule, whichever declares it.
    expect: (unaryCases.find((c) => c.endpoint === 'limited') as UnaryCase).expect,
    formats: JSON_ONLY,
  },
  {
    name: 'named route: GET fields travel in the path and the query, converted by the schema',
    endpoint: 'orders.list',
    token: 'none',
    request: { shop: 'corner', limit: 3 },
    expect: { value: { shop: 'corner', limit: 3 } },
    formats: JSON_ONLY,
  },
]
