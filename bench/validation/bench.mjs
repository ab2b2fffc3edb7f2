#!/usr/bin/env node
// Per-call validation cost of one request model written four ways, measured side by side in one run:
// our JSON Schema path (`jsonSchemaModel`, ajv), a TypeBox schema through the same ajv path (what
// `request: TypeBoxSchema` does), TypeBox's own compiled validator (`typebox/compile`), and a Zod 4
// schema through `~standard.validate` (what `request: zodSchema` does) beside Zod's own `safeParse`.
// Interleaved samples, medians, and ops/s as a ratio of the JSON Schema path measured in the same
// rounds, so that the load of a shared machine moves every column alike.
// Usage: node bench/validation/bench.mjs [--ms 200] [--samples 7]   (build packages/core first)
import { jsonSchemaModel } from '@trivium/core'
import { resolveModel } from '@trivium/core/internal'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import * as z from 'zod'

const arg = (name, def) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? def : Number(process.argv[i + 1])
}
const SAMPLE_MS = arg('--ms', 200)
const SAMPLES = arg('--samples', 7)

const Int32 = { minimum: -(2 ** 31), maximum: 2 ** 31 - 1 }
const TbOrder = Type.Object({
  id: Type.Integer(Int32),
  customer: Type.String({ minLength: 1 }),
  items: Type.Array(Type.Object({ sku: Type.String(), qty: Type.Integer(Int32), price: Type.Number() })),
  note: Type.Optional(Type.String()),
})
const ZOrder = z.object({
  id: z.int32(),
  customer: z.string().min(1),
  items: z.array(z.object({ sku: z.string(), qty: z.int32(), price: z.number() })),
  note: z.string().optional(),
})
const value = {
  id: 42,
  customer: 'Ada',
  items: [
    { sku: 'a-1', qty: 2, price: 9.5 },
    { sku: 'b-2', qty: 1, price: 120 },
    { sku: 'c-3', qty: 5, price: 0.25 },
  ],
  note: 'leave at the door',
}
const bad = { ...value, items: [{ sku: 'a-1', qty: 'two', price: 9.5 }] }

const jsonModel = jsonSchemaModel('Order', JSON.parse(JSON.stringify(TbOrder)))
const tbModel = resolveModel(TbOrder, 'Order')
const tbCompiled = Compile(TbOrder)
const zodModel = resolveModel(ZOrder, 'Order')

const refuses = (fn) => () => {
  try {
    fn()
  } catch {
    return
  }
  throw new Error('accepted a bad value')
}
const cases = {
  'JSON Schema (jsonSchemaModel, ajv)': () => jsonModel.fromJSON(value),
  'TypeBox via our ajv path': () => tbModel.fromJSON(value),
  'TypeBox compiled (typebox/compile Check)': () => tbCompiled.Check(value),
  'Zod 4 via ~standard.validate (our model)': () => zodModel.fromJSON(value),
  'Zod 4 ~standard.validate (library alone)': () => ZOrder['~standard'].validate(value),
  'Zod 4 safeParse (library alone)': () => ZOrder.safeParse(value),
  'refusal: JSON Schema': refuses(() => jsonModel.fromJSON(bad)),
  'refusal: Zod 4 (our model)': refuses(() => zodModel.fromJSON(bad)),
}

function sample(fn) {
  let n = 0
  const end = performance.now() + SAMPLE_MS
  let now = performance.now()
  while (now < end) {
    for (let i = 0; i < 200; i++) fn()
    n += 200
    now = performance.now()
  }
  return n / ((now - (end - SAMPLE_MS)) / 1000)
}

for (const fn of Object.values(cases)) sample(fn) // warm up every path before the timed rounds
const rates = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let s = 0; s < SAMPLES; s++) for (const [name, fn] of Object.entries(cases)) rates[name].push(sample(fn))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const base = median(rates['JSON Schema (jsonSchemaModel, ajv)'])
const badBase = median(rates['refusal: JSON Schema'])
const load = (await import('node:os')).loadavg()[0].toFixed(1)
console.log(`validation of one Order (3 items), ${SAMPLES} samples × ${SAMPLE_MS} ms, load ${load}`)
console.log('| model | ops/s (median) | ns/call | × JSON Schema path |')
console.log('| --- | ---: | ---: | ---: |')
for (const [name, xs] of Object.entries(rates)) {
  const m = median(xs)
  const ref = name.startsWith('refusal') ? badBase : base
  console.log(
    `| ${name} | ${Math.round(m).toLocaleString('en')} | ${Math.round(1e9 / m)} | ${(m / ref).toFixed(2)} |`,
  )
}
