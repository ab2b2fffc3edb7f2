// Type tests (checked by `pnpm typecheck`, never run): endpoint handlers are typed from the schemas
// people write — Model<T> → T, TypeBox → Static, Standard Schema → InferInput / InferOutput.
import {
  jsonSchemaModel,
  type Model,
  type SchemaInput,
  type SchemaOutput,
  type schemaModel,
  type Trivium,
} from '@trivium/core'
import { type } from 'arktype'
import Type from 'typebox'
import * as v from 'valibot'
import * as z from 'zod'

declare const trivium: Trivium
type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false
const same = <A, B>(_: Equal<A, B>): void => {}

const CreateOrder = Type.Object({ sku: Type.String(), qty: Type.Integer({ minimum: 1, maximum: 100 }) })
const Order = Type.Object({ id: Type.Integer(), sku: Type.String(), note: Type.Optional(Type.String()) })
same<SchemaOutput<typeof CreateOrder>, { sku: string; qty: number }>(true)

const ZCreate = z.object({ sku: z.string(), qty: z.string().transform((s) => Number(s)) })
same<SchemaInput<typeof ZCreate>, { sku: string; qty: string }>(true)
same<SchemaOutput<typeof ZCreate>, { sku: string; qty: number }>(true)

const VCreate = v.object({ sku: v.string(), qty: v.number() })
same<SchemaOutput<typeof VCreate>, { sku: string; qty: number }>(true)
const ACreate = type({ sku: 'string', qty: 'number' })
same<SchemaOutput<typeof ACreate>, { sku: string; qty: number }>(true)

const model: Model<{ a: number }> = jsonSchemaModel('A', { type: 'object' })
same<SchemaOutput<typeof model>, { a: number }>(true)
same<SchemaOutput<{ type: 'object' }>, unknown>(true)
same<SchemaOutput<ReturnType<typeof schemaModel<typeof ZCreate>>>, { sku: string; qty: number }>(true)

// TypeBox: the handler takes Static<request> and returns Static<response>.
trivium.endpoint(
  'orders.create',
  { method: 'POST', url: '/orders', request: CreateOrder, response: Order },
  (order) => ({ id: 1, sku: order.sku.toUpperCase(), note: `x${order.qty.toFixed(0)}` }),
)
trivium.endpoint(
  'orders.bad',
  { method: 'POST', url: '/orders-bad', request: CreateOrder, response: Order },
  // @ts-expect-error `id` must be a number (Static<typeof Order>)
  () => ({ id: 'one', sku: 'a' }),
)
trivium.endpoint('orders.unknown', { method: 'POST', url: '/o3', request: CreateOrder }, (order) => {
  // @ts-expect-error `nope` is not a field of Static<typeof CreateOrder>
  return order.nope
})

// Zod: the handler takes the output (after transforms) and returns the response schema's input.
trivium.endpoint(
  'orders.zod',
  { method: 'POST', url: '/orders-zod', request: ZCreate, response: z.object({ total: z.number() }) },
  (order) => ({ total: order.qty * 2 }),
)
trivium.endpoint('orders.zod-bad', { method: 'POST', url: '/oz', request: ZCreate }, (order) => {
  // @ts-expect-error `qty` is a number after the transform
  const text: string = order.qty
  return text
})
// @ts-expect-error `total` must be a number
trivium.endpoint(
  'orders.zod-response',
  { method: 'POST', url: '/oz2', response: z.object({ total: z.number() }) },
  () => ({
    total: 'many',
  }),
)

// Valibot and ArkType streams.
trivium.stream('ticks.valibot', { method: 'POST', url: '/tv', request: VCreate }, async function* (req) {
  yield req.qty + 1
})
trivium.endpoint('orders.ark', { method: 'POST', url: '/oa', request: ACreate }, (order) => {
  // @ts-expect-error `qty` is a number
  order.qty.toUpperCase()
  return order.sku
})

// Models and explicit type arguments keep working as before.
trivium.endpoint<{ a: number }, { b: string }>(
  'legacy',
  { method: 'POST', url: '/legacy', request: model },
  (req) => ({ b: String(req.a) }),
)
