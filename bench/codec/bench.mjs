#!/usr/bin/env node
// Codec benchmark: encode ops/s, decode ops/s and encoded size for three models, generated codec vs
// JSON.stringify/JSON.parse, protobufjs, avsc and msgpackr. Every number is the median of several
// timed samples taken in this run; ratios are against JSON (and protobufjs) measured in the same run.
// Usage: node bench/codec/bench.mjs [--ms 200] [--samples 5]   (build packages/codec first)
import { importDep, loadModels } from './load.mjs'

const arg = (name, def) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? def : Number(process.argv[i + 1])
}
const SAMPLE_MS = arg('--ms', 200)
const SAMPLES = arg('--samples', 5)

const schema = {
  models: {
    Small: { id: 'int32', name: 'string', active: 'bool', score: 'float64' },
    Address: { street: 'string', city: 'string', zip: 'string' },
    Customer: { name: 'string', email: 'string', address: '@Address?' },
    Item: { sku: 'string', qty: 'int32', price: 'float64' },
    Order: {
      id: 'int32',
      customer: '@Customer',
      items: '[@Item]',
      tags: 'map<string, string>',
      note: 'string?',
      shipping: '@Address?',
    },
    Batch: { items: '[@Item]' },
  },
}
const M = await loadModels(schema)
const protobuf = (await importDep('protobufjs')).default
const avro = (await importDep('avsc')).default
const { pack, unpack } = await importDep('msgpackr')

const proto = protobuf.parse(`
syntax = "proto3";
message Small { int32 id = 1; string name = 2; bool active = 3; double score = 4; }
message Address { string street = 1; string city = 2; string zip = 3; }
message Customer { string name = 1; string email = 2; optional Address address = 3; }
message Item { string sku = 1; int32 qty = 2; double price = 3; }
message Order { int32 id = 1; Customer customer = 2; repeated Item items = 3; map<string, string> tags = 4;
                optional string note = 5; optional Address shipping = 6; }
message Batch { repeated Item items = 1; }
`).root

const aAddress = {
  type: 'record',
  name: 'Address',
  fields: [
    { name: 'street', type: 'string' },
    { name: 'city', type: 'string' },
    { name: 'zip', type: 'string' },
  ],
}
const aItem = {
  type: 'record',
  name: 'Item',
  fields: [
    { name: 'sku', type: 'string' },
    { name: 'qty', type: 'int' },
    { name: 'price', type: 'double' },
  ],
}
const avroTypes = {
  Small: avro.Type.forSchema({
    type: 'record',
    name: 'Small',
    fields: [
      { name: 'id', type: 'int' },
      { name: 'name', type: 'string' },
      { name: 'active', type: 'boolean' },
      { name: 'score', type: 'double' },
    ],
  }),
  Order: avro.Type.forSchema({
    type: 'record',
    name: 'Order',
    fields: [
      { name: 'id', type: 'int' },
      {
        name: 'customer',
        type: {
          type: 'record',
          name: 'Customer',
          fields: [
            { name: 'name', type: 'string' },
            { name: 'email', type: 'string' },
            { name: 'address', type: ['null', aAddress] },
          ],
        },
      },
      { name: 'items', type: { type: 'array', items: aItem } },
      { name: 'tags', type: { type: 'map', values: 'string' } },
      { name: 'note', type: ['null', 'string'] },
      { name: 'shipping', type: ['null', 'Address'] },
    ],
  }),
  Batch: avro.Type.forSchema({
    type: 'record',
    name: 'Batch',
    fields: [{ name: 'items', type: { type: 'array', items: aItem } }],
  }),
}

// ---------- data: the same values in each library's natural form ----------
const small = { id: 42, name: 'Ada Lovelace', active: true, score: 98.25 }
const addr = { street: '12 Analytical Engine Rd', city: 'London', zip: 'N1 9GU' }
const item = (i) => ({ sku: `SKU-${String(i).padStart(6, '0')}`, qty: (i % 7) + 1, price: 9.99 + i / 100 })
const order = {
  id: 1001,
  customer: { name: 'Grace Hopper', email: 'grace@example.com', address: addr },
  items: Array.from({ length: 10 }, (_, i) => item(i)),
  tags: { priority: 'high', channel: 'web', region: 'eu-west' },
  note: 'leave at the door',
  shipping: addr,
}
const batch = { items: Array.from({ length: 1000 }, (_, i) => item(i)) }

const plainToOurs = {
  Small: (v) => new M.Small(v),
  Order: (v) => M.Order.fromJSON(v),
  Batch: (v) => M.Batch.fromJSON(v),
}
const avroValue = {
  Small: (v) => v,
  Order: (v) => v, // avsc unions take the bare value when the branch is unambiguous (wrapUnions: auto)
  Batch: (v) => v,
}

function opsPerSec(fn) {
  // warm up, then SAMPLES timed runs of ~SAMPLE_MS each; median ops/s
  let n = 0
  const warm = performance.now() + 100
  while (performance.now() < warm) {
    fn()
    n++
  }
  const batchSize = Math.max(1, Math.floor(n / 10))
  const rates = []
  for (let s = 0; s < SAMPLES; s++) {
    let ops = 0
    const start = performance.now()
    let now = start
    while (now - start < SAMPLE_MS) {
      for (let i = 0; i < batchSize; i++) fn()
      ops += batchSize
      now = performance.now()
    }
    rates.push((ops * 1000) / (now - start))
  }
  rates.sort((a, b) => a - b)
  return rates[Math.floor(rates.length / 2)]
}

let sink = 0
const results = []
for (const [name, plain] of [
  ['Small', small],
  ['Order', order],
  ['Batch', batch],
]) {
  const ours = plainToOurs[name](plain)
  const Model = M[name]
  const P = proto.lookupType(name)
  const pmsg = P.fromObject(plain)
  const A = avroTypes[name]
  const av = avroValue[name](plain)
  const codecs = {
    trivium: { enc: () => Model.encode(ours), dec: (b) => Model.decode(b) },
    json: { enc: () => JSON.stringify(plain), dec: (s) => JSON.parse(s) },
    protobufjs: { enc: () => P.encode(pmsg).finish(), dec: (b) => P.decode(b) },
    avsc: { enc: () => A.toBuffer(av), dec: (b) => A.fromBuffer(b) },
    msgpackr: { enc: () => pack(plain), dec: (b) => unpack(b) },
  }
  // sanity: every codec round-trips the value
  if (!Model.decode(Model.encode(ours)).equals(ours)) throw new Error(`${name}: trivium round trip failed`)
  for (const [codec, { enc, dec }] of Object.entries(codecs)) {
    const bytes = enc()
    const size = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length
    const encode = opsPerSec(() => {
      sink += enc().length
    })
    const decode = opsPerSec(() => {
      sink += dec(bytes) ? 1 : 0
    })
    results.push({ model: name, codec, encode, decode, size })
    process.stderr.write('.')
  }
}
process.stderr.write(`\n(sink ${sink > 0})\n`)

const fmt = (n) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0)
const lines = [
  `Node ${process.version}, ${SAMPLES} samples × ${SAMPLE_MS} ms, median ops/s. Ratios: ×JSON and ×protobufjs (higher is faster; size: lower is smaller).`,
  '',
  '| model | codec | encode ops/s | ×JSON | ×pbjs | decode ops/s | ×JSON | ×pbjs | size (B) | size ×JSON |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
]
for (const r of results) {
  const json = results.find((x) => x.model === r.model && x.codec === 'json')
  const pb = results.find((x) => x.model === r.model && x.codec === 'protobufjs')
  lines.push(
    `| ${r.model} | ${r.codec} | ${fmt(r.encode)} | ${(r.encode / json.encode).toFixed(2)} | ${(r.encode / pb.encode).toFixed(2)} | ${fmt(r.decode)} | ${(r.decode / json.decode).toFixed(2)} | ${(r.decode / pb.decode).toFixed(2)} | ${r.size} | ${(r.size / json.size).toFixed(2)} |`,
  )
}
console.log(lines.join('\n'))
