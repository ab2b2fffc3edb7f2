// Hostile HTTP/1.1 over raw sockets (issue 29): requests written as bytes, in the pieces chosen (a
// turn apart, Nagle off, so the server reads them as separate chunks), the connection ended or reset
// after them, and every response the server wrote parsed back. Shared by the demo's and the
// conformance app's sweeps and by the HTTP fuzz run.
import net, { type AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { isNamedRoute } from '@trivium/core/internal'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: Buffer
}

export interface HostileRequest {
  name: string
  /** The bytes, in the pieces they are written. */
  parts: Buffer[]
  /** After the last piece: half-close (FIN) or reset (RST). */
  finish: 'end' | 'reset'
}

const b = (s: string | Buffer): Buffer => (typeof s === 'string' ? Buffer.from(s, 'latin1') : s)

/** Every response in `data` (pipelined answers included); a cut last response is dropped. */
export function parseResponses(data: Buffer): RawResponse[] {
  const out: RawResponse[] = []
  let at = 0
  while (at < data.length) {
    const headEnd = data.indexOf('\r\n\r\n', at)
    if (headEnd < 0) break
    const [statusLine = '', ...lines] = data.subarray(at, headEnd).toString('latin1').split('\r\n')
    const status = Number(statusLine.split(' ')[1])
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const i = line.indexOf(':')
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
    }
    let bodyStart = headEnd + 4
    let body: Buffer
    if (headers['transfer-encoding'] === 'chunked') {
      const pieces: Buffer[] = []
      for (;;) {
        const lineEnd = data.indexOf('\r\n', bodyStart)
        if (lineEnd < 0) return out
        const size = Number.parseInt(data.subarray(bodyStart, lineEnd).toString('latin1'), 16)
        if (Number.isNaN(size)) return out
        bodyStart = lineEnd + 2
        if (size === 0) {
          bodyStart += 2
          break
        }
        pieces.push(data.subarray(bodyStart, bodyStart + size))
        bodyStart += size + 2
      }
      body = Buffer.concat(pieces)
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      if (bodyStart + length > data.length) break
      body = data.subarray(bodyStart, bodyStart + length)
      bodyStart += length
    } else if (status === 204 || status === 304 || (status >= 100 && status < 200)) {
      body = Buffer.alloc(0)
    } else {
      body = data.subarray(bodyStart)
      bodyStart = data.length
    }
    out.push({ status, headers, body })
    at = bodyStart
  }
  return out
}

/**
 * Writes the request's pieces on a new connection, then ends or resets it, and resolves with what the
 * server answered once it closed the connection. Rejects when the server keeps it open `closeMs`
 * after our end: a hang.
 */
export function exchange(
  port: number,
  request: HostileRequest,
  closeMs = 15_000,
  localAddress?: string,
): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress })
    socket.setNoDelay(true)
    const received: Buffer[] = []
    let timer: NodeJS.Timeout | undefined
    let closed = false
    socket.on('data', (chunk) => received.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      closed = true
      clearTimeout(timer)
      resolve(parseResponses(Buffer.concat(received)))
    })
    socket.once('connect', async () => {
      for (const [i, part] of request.parts.entries()) {
        if (socket.destroyed) break
        if (i > 0) await new Promise((r) => setImmediate(r))
        socket.write(part)
      }
      if (request.finish === 'reset') socket.resetAndDestroy()
      else socket.end()
      if (closed) return
      timer = setTimeout(() => {
        socket.destroy()
        reject(
          new Error(
            `${request.name}: the server kept the connection open ${closeMs} ms after the client's end`,
          ),
        )
      }, closeMs)
    })
  })
}

/** Runs `requests` through `exchange`, `concurrency` at a time; the answers in the requests' order. */
export async function exchangeAll(
  port: number,
  requests: HostileRequest[],
  concurrency = 8,
): Promise<RawResponse[][]> {
  const results: RawResponse[][] = new Array(requests.length)
  let next = 0
  async function worker(): Promise<void> {
    while (next < requests.length) {
      const i = next++
      results[i] = await exchange(port, requests[i] as HostileRequest)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return results
}

/** Every (method, path) the app serves, from `printRoutes` (HEAD left out; `:param` and `*` filled in). */
export function routesOf(app: FastifyInstance): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = []
  const stack: { depth: number; path: string }[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([\s│├└─]*)(\S.*?) \(([A-Z, ]+)\)$/.exec(line)
    if (!match) continue
    const depth = (match[1] as string).length
    while (stack.length > 0 && (stack.at(-1) as { depth: number }).depth >= depth) stack.pop()
    const path = (stack.at(-1)?.path ?? '') + (match[2] as string)
    stack.push({ depth, path })
    const url = path.replace(/:[^/]+/g, '1').replace(/\*/g, 'x')
    for (const method of (match[3] as string).split(', ')) {
      if (method !== 'HEAD') routes.push({ method, path: url })
    }
  }
  return routes
}

export const CONTENT_TYPES: (string | undefined)[] = [
  'application/json',
  'application/json; charset=utf-8',
  'application/problem+json',
  'text/plain',
  'application/octet-stream',
  'application/x-platform-binary',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zz',
  undefined,
  'garbage',
  'application/json; charset=iso-8859-1',
  '*/*',
]

/** JSON with invalid UTF-8 (a lone continuation byte, a 0xFF, a cut 3-byte sequence). */
export const BAD_UTF8_JSON = b('{"username":"a\x80b","password":"\xff","text":"\xe2\x82","n":1}')

function head(method: string, path: string, headers: Record<string, string | undefined>): string {
  let text = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) text += `${name}: ${value}\r\n`
  return `${text}\r\n`
}

function chunked(pieces: Buffer[], terminate = true): Buffer {
  const out: Buffer[] = []
  for (const p of pieces) out.push(b(`${p.length.toString(16)}\r\n`), p, b('\r\n'))
  if (terminate) out.push(b('0\r\n\r\n'))
  return Buffer.concat(out)
}

/** Cuts `bytes` into single bytes. */
export function byteByByte(bytes: Buffer): Buffer[] {
  return Array.from(bytes, (x) => Buffer.from([x]))
}

/** The hostile requests for one route: every Content-Type × framing, and the framing attacks. */
export function hostileRequests(method: string, path: string, bodyLimit: number): HostileRequest[] {
  const body = BAD_UTF8_JSON
  const out: HostileRequest[] = []
  const add = (name: string, parts: (string | Buffer)[], finish: 'end' | 'reset' = 'end') =>
    out.push({ name: `${method} ${path}: ${name}`, parts: parts.map(b), finish })
  for (const type of CONTENT_TYPES) {
    const ct = { 'content-type': type }
    const t = `[${type ?? 'no type'}]`
    add(`${t} whole`, [head(method, path, { ...ct, 'content-length': String(body.length) }), body])
    add(`${t} truncated, FIN`, [
      head(method, path, { ...ct, 'content-length': String(body.length + 50) }),
      body,
    ])
    add(
      `${t} truncated, RST`,
      [head(method, path, { ...ct, 'content-length': String(body.length + 50) }), body],
      'reset',
    )
    add(`${t} chunked, characters cut across chunks`, [
      head(method, path, { ...ct, 'transfer-encoding': 'chunked' }),
      chunked([body.subarray(0, 14), body.subarray(14, 40), body.subarray(40)]),
    ])
    add(`${t} no Content-Length`, [head(method, path, ct), body])
    add(`${t} Content-Length too small`, [
      head(method, path, { ...ct, 'content-length': String(body.length - 5) }),
      body,
    ])
    add(`${t} byte by byte`, [
      head(method, path, { ...ct, 'content-length': String(body.length) }),
      ...byteByByte(body),
    ])
  }
  const json = { 'content-type': 'application/json' }
  add('Transfer-Encoding: xchunked', [head(method, path, { ...json, 'transfer-encoding': 'xchunked' }), body])
  add('Content-Length and Transfer-Encoding', [
    head(method, path, { ...json, 'content-length': '5', 'transfer-encoding': 'chunked' }),
    chunked([body]),
  ])
  add('chunked, no last chunk, FIN', [
    head(method, path, { ...json, 'transfer-encoding': 'chunked' }),
    chunked([body], false),
  ])
  add(
    'chunked, no last chunk, RST',
    [head(method, path, { ...json, 'transfer-encoding': 'chunked' }), chunked([body], false)],
    'reset',
  )
  add('bad chunk size', [
    head(method, path, { ...json, 'transfer-encoding': 'chunked' }),
    'zz\r\nabc\r\n0\r\n\r\n',
  ])
  add('huge Content-Length', [head(method, path, { ...json, 'content-length': '999999999999' }), body])
  add('negative Content-Length', [head(method, path, { ...json, 'content-length': '-1' }), body])
  add('Content-Length not a number', [head(method, path, { ...json, 'content-length': 'abc' }), body])
  add(
    'headers, then RST (aborted upload)',
    [head(method, path, { ...json, 'content-length': '100' })],
    'reset',
  )
  add('Expect: 100-continue', [
    head(method, path, { ...json, 'content-length': String(body.length), expect: '100-continue' }),
    body,
  ])
  add('Upgrade: websocket with a body', [
    head(method, path, {
      ...json,
      'content-length': String(body.length),
      connection: 'Upgrade',
      upgrade: 'websocket',
    }),
    body,
  ])
  // Over the body limit, the bad byte after the point where Fastify's reader stopped listening.
  const big = Buffer.alloc(bodyLimit + 70_000, 0x61)
  big[big.length - 1] = 0xff
  add('over the limit, chunked, bad byte after it', [
    head(method, path, { ...json, 'transfer-encoding': 'chunked' }),
    chunked([b('{"a":"'), big.subarray(0, 60_000), big.subarray(60_000), b('"}')]),
  ])
  add(
    'over the limit, chunked, RST after it',
    [head(method, path, { ...json, 'transfer-encoding': 'chunked' }), chunked([b('{"a":"'), big], false)],
    'reset',
  )
  // Compressed bodies (PROTOCOL.md "Compression"): the limit holds for the inflated size.
  const bomb = gzipSync(Buffer.concat([b('{"a":"'), Buffer.alloc(bodyLimit + 70_000, 0x61), b('"}')]))
  const gz = { ...json, 'content-encoding': 'gzip' }
  add('gzip inflating past the limit', [
    head(method, path, { ...gz, 'content-length': String(bomb.length) }),
    bomb,
  ])
  add(
    'gzip inflating past the limit, chunked, RST',
    [head(method, path, { ...gz, 'transfer-encoding': 'chunked' }), chunked([bomb], false)],
    'reset',
  )
  const badInside = gzipSync(body)
  add('gzip of invalid UTF-8', [
    head(method, path, { ...gz, 'content-length': String(badInside.length) }),
    badInside,
  ])
  add('Content-Encoding: gzip, bytes not gzip', [
    head(method, path, { ...gz, 'content-length': String(body.length) }),
    body,
  ])
  add('gzip cut short, FIN', [
    head(method, path, { ...gz, 'content-length': String(badInside.length + 20) }),
    badInside.subarray(0, 10),
  ])
  add('unknown Content-Encoding', [
    head(method, path, { ...json, 'content-encoding': 'compress', 'content-length': String(body.length) }),
    body,
  ])
  return out
}

/**
 * A body route's invalid UTF-8 sweep: a 0xFF at every position of a JSON body, the body written in two
 * pieces cut there (so the bad byte starts a chunk), and a 3-byte character cut at every point.
 */
export function utf8Sweep(method: string, path: string, type = 'application/json'): HostileRequest[] {
  const valid = Buffer.from('{"username":"a€b","password":"😀"}')
  const out: HostileRequest[] = []
  for (let i = 0; i <= valid.length; i++) {
    const body = Buffer.concat([valid.subarray(0, i), Buffer.from([0xff]), valid.subarray(i)])
    out.push({
      name: `${method} ${path}: 0xFF at ${i}`,
      parts: [
        b(head(method, path, { 'content-type': type, 'content-length': String(body.length) })),
        body.subarray(0, i),
        body.subarray(i),
      ].filter((p) => p.length > 0),
      finish: 'end',
    })
  }
  // A character cut by the body's end (the decoder's flush) and by a chunk boundary then a bad byte.
  const cut = Buffer.from('{"username":"\xe2\x82', 'latin1')
  out.push({
    name: `${method} ${path}: body ends inside a character`,
    parts: [b(head(method, path, { 'content-type': type, 'content-length': String(cut.length) })), cut],
    finish: 'end',
  })
  const split = Buffer.from('{"username":"\xe2\x82\x41"}', 'latin1')
  out.push({
    name: `${method} ${path}: a character cut across chunks, its last byte wrong`,
    parts: [
      b(head(method, path, { 'content-type': type, 'content-length': String(split.length) })),
      split.subarray(0, 14),
      split.subarray(14, 15),
      split.subarray(15),
    ],
    finish: 'end',
  })
  return out
}

/** No stack trace, no file path: what a response body may never hold. */
export const LEAK = /\n\s+at |node_modules|\/work\/|\.[cm]?[jt]s:\d+|file:\/\//

/** Whether `res` is the error body of PROTOCOL.md ("Errors"), JSON, nothing leaked. */
export function errorBodyProblem(res: RawResponse): string | undefined {
  // The spec's one text answer: a refused CORS preflight is 403 with the body `Origin not allowed`.
  if (res.status === 403 && res.body.toString() === 'Origin not allowed') return undefined
  if (res.headers['content-type'] !== 'application/json; charset=utf-8')
    return `content-type ${res.headers['content-type']}`
  const text = res.body.toString('utf8')
  if (LEAK.test(text)) return `leaks: ${text}`
  let body: Record<string, unknown>
  try {
    body = JSON.parse(text)
  } catch {
    return `not JSON: ${text}`
  }
  const keys = Object.keys(body).filter((k) => k !== 'details' && k !== 'retryAfter')
  if (keys.join() !== 'statusCode,code,error,message,requestId') return `keys ${Object.keys(body).join()}`
  if (body.statusCode !== res.status) return `statusCode ${body.statusCode} for status ${res.status}`
  if (typeof body.code !== 'string' || !body.code.startsWith('TRV_')) return `code ${body.code}`
  return undefined
}

/** The cases every route gets; the rest of the matrix is spread over the body routes. */
const EVERY_ROUTE = [
  '[application/json] whole',
  '[application/json] truncated, RST',
  '[application/json] chunked, characters cut across chunks',
  '[application/json] byte by byte',
  '[no type] whole',
  '[application/octet-stream] truncated, FIN',
  'Transfer-Encoding: xchunked',
  'Content-Length and Transfer-Encoding',
  'headers, then RST (aborted upload)',
  'over the limit, chunked, bad byte after it',
]

/**
 * Drives every route of a listening `app` with hostile requests over raw sockets and checks the
 * answers: each route gets the EVERY_ROUTE cases, the whole matrix of `hostileRequests` and the
 * invalid-UTF-8 sweep are spread over the body routes (each case, each position, once), and the app
 * answers a last `GET <alive>` with 200. `skipBodyCheck` names cases whose answers are another
 * issue's (their connection must still close and the process live).
 */
export async function sweepRoutes(
  t: Test,
  app: FastifyInstance,
  options: { bodyLimit: number; alive: string; skipBodyCheck?: (name: string) => boolean },
): Promise<void> {
  const port = (app.server.address() as AddressInfo).port
  const routes = routesOf(app)
  const bodyRoutes = routes.filter((r) => r.method === 'POST' || r.method === 'PUT')
  const requests: HostileRequest[] = []
  for (const r of routes) {
    requests.push(
      ...hostileRequests(r.method, r.path, options.bodyLimit).filter((q) =>
        EVERY_ROUTE.some((name) => q.name.endsWith(`: ${name}`)),
      ),
    )
  }
  const matrix = hostileRequests('M', '/p', options.bodyLimit).map((q) => q.name.slice('M /p: '.length))
  matrix.forEach((name, i) => {
    const r = bodyRoutes[i % bodyRoutes.length] as { method: string; path: string }
    const q = hostileRequests(r.method, r.path, options.bodyLimit).find((x) => x.name.endsWith(`: ${name}`))
    if (q && !EVERY_ROUTE.includes(name)) requests.push(q)
  })
  // The route of an endpoint taking a stream of requests refuses every call before reading a body
  // (PROTOCOL.md "Client and bidirectional streams"), so the UTF-8 sweep goes to the routes that read one.
  // A named Fastify route (PROTOCOL.md "Named routes") reads its body as the application's route always
  // did (Fastify's parser, its guard after it): its HTTP behaviour is not Trivium's to change.
  const notSwept = new Set(
    app.trivium.registry
      .list()
      .filter((d) => d.requestStream || isNamedRoute(d))
      .map((d) => `${d.method} ${d.url.replace(/:[^/]+/g, '1')}`),
  )
  const readingRoutes = bodyRoutes.filter((r) => !notSwept.has(`${r.method} ${r.path}`))
  const sweep: HostileRequest[] = []
  const positions = utf8Sweep('M', '/p').length
  for (let i = 0; i < positions; i++) {
    const r = readingRoutes[i % readingRoutes.length] as { method: string; path: string }
    const type = i % 2 === 0 ? 'application/json' : 'application/json; charset=utf-8'
    sweep.push(utf8Sweep(r.method, r.path, type)[i] as HostileRequest)
  }
  const all = [...requests, ...sweep]
  const started = performance.now()
  const answers = await exchangeAll(port, all, 16)
  t.comment(`${all.length} hostile requests in ${Math.round(performance.now() - started)} ms`)

  const problems: string[] = []
  for (const [i, responses] of answers.entries()) {
    const name = (all[i] as HostileRequest).name
    if (options.skipBodyCheck?.(name)) continue
    for (const res of responses) {
      const problem = res.status >= 400 ? errorBodyProblem(res) : undefined
      if (problem) problems.push(`${name}: ${res.status} ${problem}`)
    }
  }
  t.same(problems, [], `every error answered to ${all.length} hostile requests is the JSON error body`)

  const wrong: string[] = []
  for (const [i, request] of sweep.entries()) {
    const res = answers[requests.length + i]?.[0]
    const message = res ? JSON.parse(res.body.toString()).message : 'no answer'
    if (res?.status !== 400 || message !== 'Request body is not valid UTF-8')
      wrong.push(`${request.name}: ${res?.status} ${message}`)
  }
  t.same(wrong, [], `each of the ${sweep.length} invalid UTF-8 bodies is refused as such`)

  const [alive] = await exchange(port, {
    name: 'alive',
    parts: [Buffer.from(`GET ${options.alive} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)],
    finish: 'end',
  })
  t.equal(alive?.status, 200, 'the process is alive and answers afterwards')
}
