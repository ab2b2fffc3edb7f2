// Issue 29 item 1: a fuzz run of the HTTP body path through a real server (the conformance app: core,
// codec, auth, RBAC, rate limiting, WebSocket, TCP), beside the decoders' fuzzing
// (packages/wire/test/fuzz.test.ts, bench/codec/fuzz.mjs). Random requests over raw sockets — method,
// path, Content-Type, framing (right, wrong, absent Content-Length, chunked, broken chunked), bodies
// (valid, mutated, invalid UTF-8, random), split at random points, ended or reset — and the server:
// never ends, never hangs a connection, never answers 5xx, answers every error with the JSON error
// body, never logs at error for what a client sent, and answers afterwards.
// Bounded in the suite (HTTP_FUZZ_REQUESTS, default 400); the long run (README "Hostile HTTP and fuzzing"):
//   HTTP_FUZZ_REQUESTS=1000000 node_modules/.bin/tap -t0 packages/conformance/test/http-fuzz.test.ts
import t from 'tap'
import { startConformanceServer } from '../dist/server.js'
import { CONTENT_TYPES, errorBodyProblem, exchange, type RawResponse, routesOf } from './hostile-http.ts'

const REQUESTS = Number(process.env.HTTP_FUZZ_REQUESTS ?? 400)
let seed = Number(process.env.HTTP_FUZZ_SEED ?? 29) >>> 0
const rand = () => {
  // xorshift32: a run is reproduced by its seed
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 4294967296
}
const int = (n: number) => Math.floor(rand() * n)
const pick = <T>(list: readonly T[]): T => list[int(list.length)] as T
const chance = (p: number) => rand() < p

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'QUERY', 'BREW']
const TEXTS = ['hello', 'a€😀b', '', ' ', '\u0000', 'x'.repeat(300)]

function randomBytes(n: number): Buffer {
  return Buffer.from(Array.from({ length: n }, () => int(256)))
}

/** A body: valid JSON, JSON with damage (overwritten, inserted, cut bytes), random bytes, or none. */
function body(): Buffer {
  const kind = int(10)
  if (kind === 0) return Buffer.alloc(0)
  if (kind === 1) return randomBytes(int(64))
  const json = Buffer.from(
    JSON.stringify({ text: pick(TEXTS), count: pick([1, -1, 2 ** 31, 1.5, '1']), runId: 'fuzz', n: int(4) }),
  )
  if (kind < 5) return json
  const bytes = [...json]
  for (let i = int(4); i >= 0; i--) {
    const at = int(bytes.length + 1)
    const op = int(3)
    if (op === 0) bytes[at] = int(256)
    else if (op === 1) bytes.splice(at, 0, pick([0xff, 0x80, 0xc0, 0xe2, 0xed, 0xf0, 0x22, 0x5c]))
    else bytes.length = Math.min(bytes.length, at)
  }
  return Buffer.from(bytes)
}

function chunked(data: Buffer, cut: boolean): Buffer {
  const out: Buffer[] = []
  let at = 0
  while (at < data.length) {
    const n = 1 + int(Math.max(1, data.length - at))
    const size = chance(0.05) ? pick(['zz', '-1', 'ffffffffffff', '']) : n.toString(16)
    out.push(Buffer.from(`${size}\r\n`), data.subarray(at, at + n), Buffer.from('\r\n'))
    at += n
  }
  if (!cut) out.push(Buffer.from('0\r\n\r\n'))
  return Buffer.concat(out)
}

interface Fuzzed {
  bytes: Buffer
  finish: 'end' | 'reset'
  cuts: number[]
  /** An upgrade to a route other than /ws gets ws's own text/html 400 (issue 29 item 3). */
  upgradeElsewhere: boolean
}

type Route = { method: string; path: string }

/** Biased toward the body path: mostly a route with its own method, JSON, framed right. */
function request(routes: Route[], token: string): Fuzzed {
  const route = pick(routes)
  const method = chance(0.6) ? route.method : pick(METHODS)
  let path = chance(0.9)
    ? route.path
    : pick(['/%zz', `/${'a'.repeat(200)}`, '/echo?x=%ff', '/echo/../echo', '*'])
  if (chance(0.1)) path += `?token=${token}`
  const headers: string[] = ['Host: 127.0.0.1']
  if (chance(0.5)) headers.push(`Authorization: Bearer ${chance(0.9) ? token : 'not.a.jwt'}`)
  const type = chance(0.9)
    ? pick(CONTENT_TYPES)
    : randomBytes(int(12))
        .toString('latin1')
        .replace(/[\r\n]/g, '')
  if (type !== undefined) headers.push(`Content-Type: ${type}`)
  const data = body()
  let payload = data
  switch (int(10)) {
    case 0:
      break // no framing header: the bytes are the next request
    case 1:
      headers.push(`Content-Length: ${Math.max(0, data.length + int(21) - 10)}`)
      break
    case 2:
      headers.push(`Content-Length: ${pick(['abc', '-1', '999999999999', '1, 2', ''])}`)
      break
    case 3:
    case 4:
      headers.push('Transfer-Encoding: chunked')
      payload = chunked(data, chance(0.2))
      break
    case 5:
      headers.push(`Transfer-Encoding: ${pick(['xchunked', 'gzip', 'chunked, chunked', 'identity'])}`)
      break
    default:
      headers.push(`Content-Length: ${data.length}`)
  }
  let upgrade = false
  if (chance(0.05)) {
    headers.push('Connection: Upgrade', 'Upgrade: websocket')
    upgrade = true
  }
  if (chance(0.05)) headers.push('Expect: 100-continue')
  if (chance(0.05))
    headers.push(
      `X-Noise: ${randomBytes(int(20))
        .toString('latin1')
        .replace(/[\r\n]/g, '')}`,
    )
  const bytes = Buffer.concat([
    Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`, 'latin1'),
    payload,
  ])
  const cuts = Array.from({ length: int(4) }, () => int(bytes.length)).sort((a, b) => a - b)
  return {
    bytes,
    finish: chance(0.2) ? 'reset' : 'end',
    cuts,
    upgradeElsewhere: upgrade && !path.startsWith('/ws'),
  }
}

/** Writes the request in its pieces from a rotating 127.0.0.x (1 M connections need more than one
 * address's ephemeral ports), ends or resets, and returns the answers once the server closed. */
function send(port: number, fuzzed: Fuzzed, n: number): Promise<RawResponse[]> {
  const parts: Buffer[] = []
  let at = 0
  for (const cut of [...fuzzed.cuts, fuzzed.bytes.length]) {
    if (cut > at) parts.push(fuzzed.bytes.subarray(at, cut))
    at = Math.max(at, cut)
  }
  const name = `the request\n${fuzzed.bytes.toString('latin1')}\n`
  return exchange(
    port,
    { name, parts, finish: fuzzed.finish },
    15_000,
    `127.0.${(n >> 8) % 4}.${2 + (n % 250)}`,
  )
}

t.test(`HTTP body path fuzz: ${REQUESTS} random requests through a real server`, async (t) => {
  const errors: string[] = []
  let warnings = 0
  const server = await startConformanceServer({
    tcpMode: 'inject',
    log: {
      level: 'warn',
      stream: {
        write(line: string) {
          const entry = JSON.parse(line) as { level: number; msg: string }
          if (entry.level >= 50) errors.push(line)
          else warnings++
        },
      },
    },
  })
  t.teardown(() => server.close())
  const port = Number(new URL(server.httpUrl).port)
  const { member } = await server.tokensFor(2929)
  // Not the `ticker` stream: it runs until its client leaves, and a half-closed client has not left.
  const routes = routesOf(server.app).filter((r) => r.path !== '/ticker')

  const problems: string[] = []
  const statuses = new Map<number, number>()
  let next = 0
  let answered = 0
  const started = performance.now()
  async function worker(): Promise<void> {
    while (next < REQUESTS && problems.length < 20) {
      const n = next++
      const fuzzed = request(routes, member as string)
      for (const res of await send(port, fuzzed, n)) {
        answered++
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
        if (res.status >= 500) problems.push(`${res.status} for\n${fuzzed.bytes.toString('latin1')}`)
        const problem = res.status >= 400 && !fuzzed.upgradeElsewhere ? errorBodyProblem(res) : undefined
        if (problem) problems.push(`${res.status} ${problem} for\n${fuzzed.bytes.toString('latin1')}`)
      }
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  const seconds = (performance.now() - started) / 1000
  t.comment(
    `${next} requests (${answered} answers) in ${seconds.toFixed(1)} s = ${Math.round(next / seconds)}/s; ` +
      `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; ${warnings} warn lines`,
  )
  t.same(problems.slice(0, 5), [], 'no 5xx; every error is the JSON error body')
  t.same(errors.slice(0, 5), [], 'nothing a client sent is logged at error')
  const ping = await fetch(`${server.httpUrl}/ping`)
  t.equal(ping.status, 200, 'the server answers afterwards')
})
