// Issue 41: a model written in TypeBox or Zod whose JSON Schema maps onto the binary layout gets the
// binary form derived at run time — the same bytes the generator writes for the equivalent schema.
import { type BinaryWriter, deriveBinaryForm, deriveLayout, encodeMessage } from '@trivium/codec/runtime'
import t from 'tap'
import Type from 'typebox'
import * as z from 'zod'
import * as v1 from './generated/v1/models.js'
import * as v2 from './generated/v2/models.js'

const SAFE = { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }
const INT32 = { minimum: -(2 ** 31), maximum: 2 ** 31 - 1 }
// Zod's JSON Schema of the JSON form (what the core adapter reads through `~standard.jsonSchema`).
const zodSchema = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>

t.test('TypeBox: the bytes of the generated v1 Order (int64, list of models, string)', async (t) => {
  const Item = Type.Object({ sku: Type.String(), qty: Type.Integer(INT32) })
  const Order = Type.Object({ id: Type.Integer(SAFE), items: Type.Array(Item), customer: Type.String() })
  const form = deriveBinaryForm(Order)
  if (form === undefined) throw new Error('no layout')
  const value = {
    id: 7,
    items: [
      { sku: 'a', qty: 1 },
      { sku: 'bé', qty: -2 },
    ],
    customer: 'c',
  }
  const generated = v1.Order.encode(
    new v1.Order({ id: 7n, items: value.items.map((i) => new v1.Item(i)), customer: 'c' }),
  )
  t.same([...form.encode(value)], [...generated])
  t.same(form.decode(generated), value)
})

t.test(
  'Zod: the bytes of the generated v2 Item (optional and nullable fields, present and absent)',
  async (t) => {
    const Item = z.object({
      sku: z.string(),
      qty: z.int32(),
      note: z.string().optional(),
      giftWrap: z.boolean().nullable(),
    })
    const form = deriveBinaryForm(zodSchema(Item))
    if (form === undefined) throw new Error('no layout')
    const full = { sku: 'a', qty: 3, note: 'n', giftWrap: true }
    t.same([...form.encode(full)], [...v2.Item.encode(new v2.Item(full))])
    t.same(form.decode(v2.Item.encode(new v2.Item(full))), full)
    const bare = { sku: 'a', qty: 3, giftWrap: null }
    const generated = v2.Item.encode(new v2.Item({ sku: 'a', qty: 3 }))
    t.same([...form.encode(bare)], [...generated])
    // absent optional → left out; absent nullable → null (as the schema each declares allows)
    t.same(form.decode(generated), bare)
    // bytes of the older v1 Item (no trailing optional fields) read as the generated reader reads them
    t.same(form.decode(v1.Item.encode(new v1.Item({ sku: 'a', qty: 3 }))), {
      sku: 'a',
      qty: 3,
      giftWrap: null,
    })
  },
)

t.test('shapes the binary format has no place for stay JSON-only', async (t) => {
  const cases: Array<[string, object]> = [
    ['an integer without bounds', Type.Object({ n: Type.Integer() })],
    ['an integer beyond the safe range', Type.Object({ n: Type.Integer({ minimum: 0, maximum: 2 ** 60 }) })],
    ['a union', Type.Object({ u: Type.Union([Type.String(), Type.Number()]) })],
    ['a map', Type.Record(Type.String(), Type.String())],
    ['a tuple', zodSchema(z.object({ p: z.tuple([z.string(), z.number()]) }))],
    ['a top level that is not an object', Type.String()],
    ['a field without a type', { type: 'object', properties: { x: {} } }],
  ]
  for (const [what, schema] of cases) t.equal(deriveLayout(schema), undefined, what)
})

t.test('a derived reader refuses bad bytes as a generated one does', async (t) => {
  const form = deriveBinaryForm(Type.Object({ n: Type.Integer(SAFE) }))
  if (form === undefined) throw new Error('no layout')
  t.throws(() => form.decode(new Uint8Array([1, 2, 0])), { name: 'DecodeError' })
  const beyond = encodeMessage((w: BinaryWriter) => {
    const at = w.beginModel()
    w.int64(2n ** 60n)
    w.endModel(at)
  }, undefined)
  t.throws(() => form.decode(beyond), {
    name: 'DecodeError',
    message: /int64 1152921504606846976 is beyond the safe integer range/,
  })
})
