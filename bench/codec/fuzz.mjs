#!/usr/bin/env node
// Mutation fuzz of the generated decoders: feeds mutated valid encodings to `decode` and reports any
// exception that is not the codec's DecodeError (a crash class), with peak memory. Not part of the tests.
// Usage: node bench/codec/fuzz.mjs [iterations=200000] [seed=1]   (build packages/codec first)
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { codecDir, loadModels } from './load.mjs'

const iterations = Number(process.argv[2] ?? 200_000)
let seed = Number(process.argv[3] ?? 1) >>> 0
const rand = () => {
  // xorshift32: reproducible runs
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}
const int = (n) => Math.floor(rand() * n)

const { DecodeError } = await import(pathToFileURL(join(codecDir, 'dist', 'runtime', 'index.js')).href)
const schema = JSON.parse(readFileSync(join(codecDir, 'test', 'schemas', 'tasks.json'), 'utf8'))
delete schema.types // the custom Money type lives in the test folder; fuzz the built-in types
for (const m of Object.values(schema.models))
  for (const [k, v] of Object.entries(m)) if (/Money/.test(v)) delete m[k]
delete schema.endpoints
const M = await loadModels(schema)

const samples = [
  [
    M.Scalars,
    {
      s: 'hé😀',
      i32: -5,
      i64: -(2n ** 40n),
      f32: 1.5,
      f64: Number.NaN,
      b: true,
      dt: new Date(12345),
      raw: new Uint8Array([1, 2, 3]),
      dyn: { a: [1, 'x', null, { b: 2.5 }] },
    },
  ],
  [
    M.Optionals,
    {
      s: 'x',
      i32: 1,
      i64: 2n,
      f64: 3,
      b: false,
      dt: new Date(0),
      raw: new Uint8Array(2),
      ref: { name: 'r', color: 'c' },
      list: [1, 2, 3],
    },
  ],
  [M.Optionals, {}],
  [
    M.Containers,
    {
      ints: [1, 2, 3],
      nested: new Map([
        ['a', [1, null, 3]],
        ['b', []],
      ]),
      byId: new Map([[5n, { name: 't' }]]),
      byNum: new Map([
        [1, 'one'],
        [-2, 'minus two'],
      ]),
      matrix: [[1.5, 2], [], [3]],
      tags: [{ name: 'x', color: 'y' }],
      maybeTags: [null, { name: 'z' }],
    },
  ],
  [
    M.Tree,
    {
      label: 'root',
      children: [
        { label: 'a', children: [{ label: 'b', children: [] }] },
        { label: 'c', children: [] },
      ],
    },
  ],
  [M.Task, { id: 1n, title: 'task', done: true, tags: ['a', 'b'], due: new Date(5), owner: { name: 'o' } }],
].map(([Model, value]) => [Model, Model.encode(value)])

const interesting = [0x00, 0x01, 0x02, 0x7f, 0x80, 0xff]
function mutate(src) {
  let b = src.slice()
  const rounds = 1 + int(3)
  for (let r = 0; r < rounds; r++) {
    switch (int(8)) {
      case 0: // flip a bit
        if (b.length) b[int(b.length)] ^= 1 << int(8)
        break
      case 1: // interesting byte
        if (b.length) b[int(b.length)] = interesting[int(interesting.length)]
        break
      case 2: {
        // 4-byte length/count: huge, negative, off by one
        if (b.length < 4) break
        const at = int(b.length - 3)
        const v = [0x7fffffff, -1, -0x80000000, 0x10000, b[at] + 1, b[at] - 1][int(6)]
        new DataView(b.buffer, b.byteOffset).setInt32(at, v, true)
        break
      }
      case 3: // truncate
        b = b.slice(0, int(b.length + 1))
        break
      case 4: {
        // insert random bytes
        const at = int(b.length + 1)
        const extra = Uint8Array.from({ length: 1 + int(8) }, () => int(256))
        b = Uint8Array.from([...b.subarray(0, at), ...extra, ...b.subarray(at)])
        break
      }
      case 5: {
        // delete a range
        const at = int(b.length + 1)
        b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + 1 + int(8))])
        break
      }
      case 6: {
        // duplicate a range (nesting, repeated items)
        const at = int(b.length + 1)
        const piece = b.subarray(at, at + 1 + int(16))
        b = Uint8Array.from([...b.subarray(0, at), ...piece, ...b.subarray(at)])
        break
      }
      default: // invalid UTF-8 lead bytes
        if (b.length) b[int(b.length)] = [0xc3, 0xe2, 0xf0, 0xf8, 0xed][int(5)]
    }
  }
  return b
}

const start = performance.now()
let ok = 0
let decodeErrors = 0
const crashes = new Map()
let peakRss = process.memoryUsage().rss
let peakHeap = process.memoryUsage().heapUsed
for (let i = 0; i < iterations; i++) {
  const [Model, valid] = samples[int(samples.length)]
  const input = mutate(valid)
  try {
    Model.decode(input)
    ok++
  } catch (err) {
    if (err instanceof DecodeError) decodeErrors++
    else {
      const key = `${Model.name}: ${err?.constructor?.name}: ${err?.message}`
      if (!crashes.has(key)) crashes.set(key, Buffer.from(input).toString('hex'))
    }
  }
  if ((i & 1023) === 0) {
    const m = process.memoryUsage()
    peakRss = Math.max(peakRss, m.rss)
    peakHeap = Math.max(peakHeap, m.heapUsed)
  }
}
const secs = (performance.now() - start) / 1000
console.log(`iterations: ${iterations} in ${secs.toFixed(1)} s (${Math.round(iterations / secs)}/s)`)
console.log(
  `decoded without error: ${ok}, DecodeError: ${decodeErrors}, other exceptions: ${crashes.size} distinct`,
)
for (const [key, hex] of crashes) console.log(`  ${key}\n    input: ${hex}`)
console.log(
  `peak RSS: ${(peakRss / 1048576).toFixed(1)} MiB, peak heap used: ${(peakHeap / 1048576).toFixed(1)} MiB`,
)
process.exitCode = crashes.size > 0 ? 1 : 0
