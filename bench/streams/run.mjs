// bench/streams: items per second of a client stream (client → server) against a server stream
// (server → client) and a bidirectional echo, over WebSocket and TCP, with @trivium/client on both
// ends as an application uses it (each `send` awaited: it waits for credit). Not part of the tests.
//   node bench/streams/run.mjs
//   env: BENCH_ROUNDS=3 BENCH_ITEMS=50000 BENCH_WINDOW=262144 (the server's clientStreamWindowBytes)
// The server runs pinned to CPU 0, this process (the client) to CPU 1 when `taskset` exists. Only the
// ratios of one run mean anything (the machine is shared).
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const ITEMS = Number(process.env.BENCH_ITEMS ?? 50_000)
const client = await import(new URL('../../packages/client/dist/node.js', import.meta.url).href)

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const pin = hasTaskset()
if (pin) execFileSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' })
const server = pin
  ? spawn('taskset', ['-c', '0', process.execPath, new URL('server.mjs', import.meta.url).pathname], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    })
  : spawn(process.execPath, [new URL('server.mjs', import.meta.url).pathname], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    })
let out = ''
server.stdout.setEncoding('utf8')
while (!out.includes('\n')) out += (await once(server.stdout, 'data'))[0]
const ports = JSON.parse(out.split('PORTS ')[1])

const model = { fromJSON: (v) => v, toJSON: (v) => v }
const spec = (name, streaming, requestStream) => ({
  name,
  method: 'POST',
  url: `/${name}`,
  request: model,
  response: model,
  streaming,
  requestStream,
})
const endpoints = {
  down: spec('down', true, false),
  up: spec('up', false, true),
  echo: spec('echo', true, true),
}
const item = (i) => ({ i, title: 'a task title of thirty-two bytes' })

function open(transport) {
  const common = { endpoints, format: 'json', reconnectAttempts: 0, timeoutMs: 0 }
  return transport === 'websocket'
    ? client.createClient({ ...common, transport: 'websocket', url: `ws://127.0.0.1:${ports.http}/ws` })
    : client.createClient({ ...common, transport: 'tcp', host: '127.0.0.1', port: ports.tcp })
}

const cases = {
  'server stream (down)': async (c) => {
    let n = 0
    for await (const _ of c.stream('down', { n: ITEMS })) n++
    return n
  },
  'client stream (up)': async (c) => {
    const up = c.clientStream('up')
    for (let i = 0; i < ITEMS; i++) await up.send(item(i))
    await up.end()
    return (await up.response).count
  },
  'bidirectional (echo)': async (c) => {
    const echo = c.bidiStream('echo')
    let n = 0
    const reading = (async () => {
      for await (const _ of echo) n++
    })()
    for (let i = 0; i < ITEMS; i++) await echo.send(item(i))
    await echo.end()
    await reading
    return n
  },
}

const results = {}
for (const transport of ['websocket', 'tcp']) {
  const c = open(transport)
  await c.connect()
  for (const fn of Object.values(cases)) await fn(c) // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, fn] of Object.entries(cases)) {
      const start = process.hrtime.bigint()
      const n = await fn(c)
      const seconds = Number(process.hrtime.bigint() - start) / 1e9
      if (n !== ITEMS) throw new Error(`${name} over ${transport}: ${n} items, expected ${ITEMS}`)
      const key = `${transport}|${name}`
      results[key] = [...(results[key] ?? []), ITEMS / seconds]
    }
  }
  await c.close()
}
server.kill('SIGTERM')

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (x) => Math.round(x).toLocaleString('en').replaceAll(',', ' ')
console.log(
  `\n${ITEMS} items of 48 bytes (JSON), ${ROUNDS} rounds, window ${process.env.BENCH_WINDOW ?? 262144} bytes\n`,
)
console.log('| case | WebSocket items/s | TCP items/s |')
console.log('|---|---:|---:|')
for (const name of Object.keys(cases)) {
  console.log(
    `| ${name} | ${fmt(median(results[`websocket|${name}`]))} | ${fmt(median(results[`tcp|${name}`]))} |`,
  )
}
const ratio = (t) => median(results[`${t}|client stream (up)`]) / median(results[`${t}|server stream (down)`])
console.log(
  `\nclient stream / server stream: WebSocket ${ratio('websocket').toFixed(2)}, TCP ${ratio('tcp').toFixed(2)}`,
)
