#!/usr/bin/env node
// Long-run mutation fuzz of every decoder that reads client bytes: the binary model reader, the JSON
// decoder (core's jsonFormat over generated fromJSON), the WebSocket frame decoder, the TCP stream
// reader (mutated streams in random chunks) and the TCP metadata map. Each decoder may only return or
// throw its own typed error (DecodeError, ValidationException, FrameError); anything else is a crash
// and is printed with its input. Reports inputs/s, the error types seen and peak memory per decoder.
// The bounded version runs in the test suite (packages/codec/test/fuzz.test.ts, packages/wire/test/fuzz.test.ts).
// Usage: node bench/codec/fuzz.mjs [inputsPerDecoder=10000000] [seed=1] [decoder,…]
//   (build packages/codec, core and wire first; decoders: binary json ws-frame tcp-stream metadata)
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { SAMPLE_VALUES } from './fuzz-inputs.mjs'
import { codecDir, importDep, loadModels } from './load.mjs'

const perDecoder = Number(process.argv[2] ?? 10_000_000)
let seed = Number(process.argv[3] ?? 1) >>> 0
const only = process.argv[4]?.split(',')
const rand = () => {
  // xorshift32: reproducible runs
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}
const int = (n) => Math.floor(rand() * n)
// Most inputs end in an exception; capturing a stack for each would be most of the run's time.
Error.stackTraceLimit = 0

const dist = (pkg, file) => pathToFileURL(join(codecDir, '..', pkg, 'dist', file)).href
const { DecodeError } = await import(dist('codec', 'runtime/index.js'))
await import(dist('codec', 'index.js')) // generated fromJSON throws core's ValidationException
const { jsonFormat, ValidationException } = await importDep('@trivium/core')
const wire = await import(dist('wire', 'index.js'))
const {
  FrameError,
  FrameType,
  decodeWsFrame,
  encodeWsFrame,
  encodeTcpFrame,
  TcpFrameReader,
  decodeMetadata,
  encodeMetadata,
} = wire

const schema = JSON.parse(readFileSync(join(codecDir, 'test', 'schemas', 'tasks.json'), 'utf8'))
delete schema.types // the custom Money type lives in the test folder; fuzz the built-in types
for (const m of Object.values(schema.models))
  for (const [k, v] of Object.entries(m)) if (/Money/.test(v)) delete m[k]
delete schema.endpoints
const M = await loadModels(schema)

const values = SAMPLE_VALUES.map(([name, value]) => [M[name], value])
const samples = values.map(([Model, value]) => [Model, Model.encode(value)])

const interesting = [0x00, 0x01, 0x02, 0x7f, 0x80, 0xff]
/** Concatenation without spreading bytes into arrays (the fuzzer's own cost stays small). */
function concat(...parts) {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

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
        b = concat(b.subarray(0, at), extra, b.subarray(at))
        break
      }
      case 5: {
        // delete a range
        const at = int(b.length + 1)
        b = concat(b.subarray(0, at), b.subarray(at + 1 + int(8)))
        break
      }
      case 6: {
        // duplicate a range (nesting, repeated items)
        const at = int(b.length + 1)
        const piece = b.subarray(at, at + 1 + int(16))
        b = concat(b.subarray(0, at), piece, b.subarray(at))
        break
      }
      default: // invalid UTF-8 lead bytes
        if (b.length) b[int(b.length)] = [0xc3, 0xe2, 0xf0, 0xf8, 0xed][int(5)]
    }
  }
  return b
}

const utf8 = new TextEncoder()
const jsonSamples = values.map(([Model, value]) => [Model, utf8.encode(JSON.stringify(Model.toJSON(value)))])
jsonSamples.push(
  [M.Tag, utf8.encode('{"name":"n","__proto__":{"polluted":1}}')],
  [M.Tag, utf8.encode('{"name":"n","constructor":{"prototype":{"polluted":1}}}')],
)
const frames = [
  { type: FrameType.REQUEST, requestId: 1, endpoint: 'tasks.create', payload: samples[0][1] },
  { type: FrameType.RESPONSE, requestId: 0x01020304, payload: utf8.encode('{}') },
  { type: FrameType.ERROR, requestId: 7, payload: utf8.encode('{"statusCode":400}') },
  { type: FrameType.STREAM_ITEM, requestId: 2, payload: Uint8Array.of(1) },
  { type: FrameType.STREAM_END, requestId: 2, payload: new Uint8Array(0) },
  { type: FrameType.CANCEL, requestId: 5, payload: new Uint8Array(0) },
  { type: FrameType.PUSH, requestId: 0, topic: 'tasks', payload: utf8.encode('{"a":1}') },
  { type: FrameType.SUBSCRIBE, requestId: 9, topic: 'tasks', payload: new Uint8Array(0) },
  { type: FrameType.PING, requestId: 3, payload: new Uint8Array(0) },
]
const metadata = encodeMetadata({ auth_token: 'eyJhbGciOiJIUzI1NiJ9.e30.sig', format: 'binary' })
const tcpRequest = (m) => ({ ...frames[0], payload: concat(m, samples[0][1]) })
const wsFrames = frames.map(encodeWsFrame)
const tcpStreams = [encodeTcpFrame(tcpRequest(metadata)), concat(...frames.map(encodeTcpFrame))]
const pick = (list) => list[int(list.length)]
const maybeRandom = (valid) =>
  int(16) === 0 ? Uint8Array.from({ length: int(64) }, () => int(256)) : mutate(valid)

/** One input per call: returns nothing, or throws. */
const decoders = {
  binary: {
    allowed: [DecodeError],
    run() {
      const [Model, valid] = pick(samples)
      const input = maybeRandom(valid)
      return [input, () => Model.decode(input)]
    },
  },
  json: {
    allowed: [ValidationException],
    run() {
      const [Model, valid] = pick(jsonSamples)
      const input = maybeRandom(valid)
      return [input, () => jsonFormat.decode(Model, input)]
    },
  },
  'ws-frame': {
    allowed: [FrameError],
    run() {
      const input = maybeRandom(pick(wsFrames))
      return [input, () => decodeWsFrame(input)]
    },
  },
  'tcp-stream': {
    allowed: [FrameError],
    run() {
      const input = maybeRandom(pick(tcpStreams))
      return [
        input,
        () => {
          const reader = new TcpFrameReader({ maxFrameBytes: 4096 })
          let at = 0
          while (at < input.length) {
            const next = Math.min(input.length, at + 1 + int(input.length))
            reader.push(input.subarray(at, next))
            at = next
          }
        },
      ]
    },
  },
  metadata: {
    allowed: [FrameError],
    run() {
      const input = maybeRandom(metadata)
      return [input, () => decodeMetadata(input)]
    },
  },
}

const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`
let failed = false
console.log(
  `Node ${process.version}, ${perDecoder.toLocaleString('en')} inputs per decoder, seed ${process.argv[3] ?? 1}`,
)
for (const [name, decoder] of Object.entries(decoders)) {
  if (only && !only.includes(name)) continue
  globalThis.gc?.()
  const start = performance.now()
  let ok = 0
  const seen = new Map() // error type → count
  const crashes = new Map()
  let peakRss = process.memoryUsage().rss
  let peakHeap = process.memoryUsage().heapUsed
  for (let i = 0; i < perDecoder; i++) {
    const [input, call] = decoder.run()
    try {
      call()
      ok++
    } catch (err) {
      const type = `${err?.constructor?.name}${err?.code ? ` ${err.code}` : ''}`
      seen.set(type, (seen.get(type) ?? 0) + 1)
      if (!decoder.allowed.some((E) => err instanceof E)) {
        const key = `${type}: ${err?.message}`
        if (!crashes.has(key)) crashes.set(key, Buffer.from(input).toString('hex').slice(0, 400))
      }
    }
    if ((i & 4095) === 0) {
      const m = process.memoryUsage()
      peakRss = Math.max(peakRss, m.rss)
      peakHeap = Math.max(peakHeap, m.heapUsed)
    }
  }
  const secs = (performance.now() - start) / 1000
  const types = [...seen].map(([type, n]) => `${type} ×${n}`).join(', ')
  console.log(
    `${name}: ${perDecoder} inputs in ${secs.toFixed(1)} s (${Math.round(perDecoder / secs).toLocaleString('en')}/s); ` +
      `ok ${ok}; errors: ${types || 'none'}; peak RSS ${mib(peakRss)}, heap ${mib(peakHeap)}; ` +
      `other exceptions: ${crashes.size}`,
  )
  for (const [key, hex] of crashes) console.log(`  ${key}\n    input: ${hex}`)
  if (crashes.size > 0) failed = true
}
if (Object.hasOwn(Object.prototype, 'polluted')) {
  console.log('Object.prototype was polluted')
  failed = true
}
process.exitCode = failed ? 1 : 0
