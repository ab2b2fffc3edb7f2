// The conformance app's contract-defined endpoints (issue 41 item 4): one written with TypeBox, one with
// Zod 4, one with a generated model, declared in a @trivium/contract contract, implemented by the server
// (`implement`) and called by a client built from the same contract (`contractEndpoints`). The case
// table runs them on every transport beside the generated endpoints and the named routes.
import { contractEndpoints } from '@trivium/client'
import { defineContract } from '@trivium/contract'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { z } from 'zod'
import type { UnaryCase } from './cases.js'
import { Lookup } from './generated/models.js'

const PlaceOrder = Type.Object(
  {
    shop: Type.String({ minLength: 1, maxLength: 32 }),
    item: Type.String({ minLength: 1, maxLength: 64 }),
    quantity: Type.Integer({ minimum: 1, maximum: 1000 }),
  },
  { additionalProperties: false },
)
const PlacedOrder = Type.Object({ shop: Type.String(), item: Type.String(), quantity: Type.Integer() })

const Shout = z.object({ text: z.string().min(1).max(64), times: z.number().int().min(1).max(5) })
const Shouted = z.object({ text: z.string() })

export const conformanceContract = defineContract({
  'contract.typebox': {
    method: 'POST',
    url: '/contract/shops/:shop/orders',
    request: PlaceOrder,
    response: PlacedOrder,
    status: 201,
  },
  'contract.zod': { method: 'POST', url: '/contract/shout', request: Shout, response: Shouted },
  'contract.generated': { method: 'GET', url: '/contract/lookup/:id', request: Lookup, response: Lookup },
})

/** Implements the contract on the conformance app (every endpoint needs a token, as the generated ones). */
export function implementConformanceContract(app: FastifyInstance): void {
  app.trivium.implement(conformanceContract, {
    'contract.typebox': (order) => ({ shop: order.shop, item: order.item, quantity: order.quantity }),
    'contract.zod': ({ text, times }) => ({ text: `${text.toUpperCase()}${'!'.repeat(times)}` }),
    'contract.generated': (lookup) => lookup,
  })
}

/** The client's table entries of the contract: the contract itself, as a client given it sees it. */
export const contractEndpointTable = contractEndpoints(conformanceContract)

const JSON_ONLY: ('json' | 'binary')[] = ['json']

/** The contract's cases. TypeBox and Zod endpoints are JSON on the client; the generated model is binary too. */
export const contractCases: UnaryCase[] = [
  {
    name: 'contract (TypeBox): the request is split over path and body, the answer typed by the contract',
    endpoint: 'contract.typebox',
    token: 'member',
    request: { shop: 'corner', item: 'tea', quantity: 2 },
    expect: { value: { shop: 'corner', item: 'tea', quantity: 2 } },
    formats: JSON_ONLY,
  },
  {
    name: 'contract (TypeBox): a field its schema refuses is a validation error naming it',
    endpoint: 'contract.typebox',
    token: 'member',
    request: { shop: 'corner', item: 'tea', quantity: 0 },
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: 'Invalid contract.typebox request: quantity must be >= 1',
        details: [{ field: 'quantity', message: 'must be >= 1' }],
      },
    },
    formats: JSON_ONLY,
  },
  {
    name: 'contract (Zod 4): validated and transformed by Zod, answered',
    endpoint: 'contract.zod',
    token: 'member',
    request: { text: 'hey', times: 2 },
    expect: { value: { text: 'HEY!!' } },
    formats: JSON_ONLY,
  },
  {
    name: "contract (Zod 4): Zod's issue is the validation error's field and message",
    endpoint: 'contract.zod',
    token: 'member',
    request: { text: 'hey', times: 9 },
    expect: {
      error: {
        kind: 'ValidationException',
        code: 'TRV_VALIDATION',
        message: 'Invalid contract.zod request: times Too big: expected number to be <=5',
        details: [{ field: 'times', message: 'Too big: expected number to be <=5' }],
      },
    },
    formats: JSON_ONLY,
  },
  {
    name: 'contract (generated model): binary and JSON, as on the codegen path',
    endpoint: 'contract.generated',
    token: 'member',
    request: { id: 41, limit: 3 },
    expect: { value: { id: 41, limit: 3 } },
  },
  {
    name: 'contract: no token on its endpoint',
    endpoint: 'contract.zod',
    token: 'none',
    request: { text: 'hey', times: 1 },
    expect: {
      error: { kind: 'UnauthorizedException', code: 'TRV_UNAUTHORIZED', message: 'Authentication required' },
    },
    formats: JSON_ONLY,
  },
]
