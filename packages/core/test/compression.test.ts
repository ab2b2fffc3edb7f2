// PROTOCOL.md "Compression", HTTP, over real sockets: compressed request bodies (the body limit on the
// inflated size, bombs stopped at the limit), the 415/400 answers, and negotiated response compression.
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import * as zlib from 'node:zlib'
import trivium, { jsonSchemaModel } from '@trivium/core'
import { HTTP_CODINGS, ZSTD_AVAILABLE } from '@trivium/core/internal'
import Fastify from 'fastify'
import type { Test } from 'tap'
import t from 'tap'
import { InflatedBody } from '../src/http/compression.ts'

const Echo = jsonSchemaModel<{ text: string }>('Echo', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})

interface Res {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

async function start(t: Test, options: Record<string, unknown> = {}) {
  const app = Fastify()
  await app.register(trivium, { bodyLimit: 64 * 1024, ...options })
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo', request: Echo, response: Echo }, (b) => b)
  app.trivium.endpoint('big', { method: 'GET', url: '/big', response: Echo }, () => ({
    text: 'task title and description '.repeat(200),
  }))
  app.trivium.stream('ticks', { method: 'GET', url: '/ticks' }, async function* () {
    yield { text: 'x'.repeat(4000) }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return (app.server.address() as AddressInfo).port
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | Readable,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () =>
        resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks) }),
      )
    })
    req.on('error', reject)
    if (body instanceof Readable) {
      body.on('error', () => {})
      body.pipe(req)
      // The server answers 413 and closes before the whole bomb is sent: that is the point.
      req.on('error', () => {})
    } else req.end(body)
  })
}

const json = (r: Res) => JSON.parse(r.body.toString())
const JSON_HEADERS = { 'content-type': 'application/json' }

t.test('request bodies in every coding are inflated and read', async (t) => {
  const port = await start(t)
  const text = 'héllo compressed ✓ '.repeat(50)
  const raw = Buffer.from(JSON.stringify({ text }))
  const bodies: Record<string, Buffer> = {
    gzip: zlib.gzipSync(raw),
    'x-gzip': zlib.gzipSync(raw),
    deflate: zlib.deflateSync(raw),
    br: zlib.brotliCompressSync(raw),
    identity: raw,
  }
  for (const [coding, body] of Object.entries(bodies)) {
    const res = await send(port, 'POST', '/echo', { ...JSON_HEADERS, 'content-encoding': coding }, body)
    t.equal(res.status, 200, coding)
    t.same(json(res), { text }, `${coding} round-trips`)
  }
  t.equal(ZSTD_AVAILABLE, typeof (zlib as { createZstdCompress?: unknown }).createZstdCompress === 'function')
  t.same(HTTP_CODINGS, ZSTD_AVAILABLE ? ['zstd', 'br', 'gzip', 'deflate'] : ['br', 'gzip', 'deflate'])
})

t.test('an unknown coding or a list of codings is 415; bytes that are not the coding are 400', async (t) => {
  const port = await start(t)
  const accepted = HTTP_CODINGS.join(', ')
  for (const coding of ['compress', 'gzip, br', ...(ZSTD_AVAILABLE ? [] : ['zstd'])]) {
    const res = await send(
      port,
      'POST',
      '/echo',
      { ...JSON_HEADERS, 'content-encoding': coding },
      zlib.gzipSync('{}'),
    )
    t.equal(res.status, 415, coding)
    t.match(json(res), {
      statusCode: 415,
      code: 'TRV_UNSUPPORTED_MEDIA_TYPE',
      error: 'UnsupportedMediaTypeException',
      message: `Unsupported Content-Encoding: ${coding} (accepted: ${accepted})`,
    })
  }
  for (const coding of ['gzip', 'deflate', 'br']) {
    const res = await send(
      port,
      'POST',
      '/echo',
      { ...JSON_HEADERS, 'content-encoding': coding },
      Buffer.from('{"text":"plain, not compressed"}'),
    )
    t.equal(res.status, 400, coding)
    t.match(json(res), {
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: `Request body is not valid ${coding} data`,
    })
  }
  // Inflated JSON that is not UTF-8 is refused as any body.
  const bad = await send(
    port,
    'POST',
    '/echo',
    { ...JSON_HEADERS, 'content-encoding': 'gzip' },
    zlib.gzipSync(Buffer.from([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])),
  )
  t.equal(bad.status, 400)
  t.equal(json(bad).message, 'Request body is not valid UTF-8')
})

t.test('hostile: the body limit applies to the inflated size; a gzip bomb is 413', async (t) => {
  const port = await start(t)
  // ~100 bytes of gzip that inflate to the limit + 1 (64 KiB + 1).
  const small = zlib.gzipSync(Buffer.from(`{"text":"${'a'.repeat(64 * 1024 - 10)}"}`))
  t.ok(small.length < 1024, `a ${small.length}-byte body`)
  const over = await send(port, 'POST', '/echo', { ...JSON_HEADERS, 'content-encoding': 'gzip' }, small)
  t.equal(over.status, 413)
  t.same(json(over), {
    statusCode: 413,
    code: 'TRV_PAYLOAD_TOO_LARGE',
    error: 'PayloadTooLargeException',
    message: 'Request body is too large',
    requestId: json(over).requestId,
  })
  // 1 GiB once inflated (1024 gzip members of 1 MiB of zeros, ~1 MiB on the wire), chunked: no
  // Content-Length to refuse it early. Answered 413 like the small one, and the server serves on.
  const member = zlib.gzipSync(Buffer.alloc(1024 * 1024), { level: 9 })
  let sent = 0
  const bomb = new Readable({
    read() {
      this.push(sent++ < 1024 ? member : null)
    },
  })
  const before = process.memoryUsage().arrayBuffers
  const res = await send(port, 'POST', '/echo', { ...JSON_HEADERS, 'content-encoding': 'gzip' }, bomb)
  t.equal(res.status, 413)
  t.equal(json(res).message, 'Request body is too large')
  t.ok(
    process.memoryUsage().arrayBuffers - before < 256 * 1024 * 1024,
    'memory stayed far from the 1 GiB the body inflates to',
  )
  const after = await send(port, 'POST', '/echo', JSON_HEADERS, Buffer.from('{"text":"still up"}'))
  t.same(json(after), { text: 'still up' })
})

t.test(
  'hostile: the inflating stream stops at the limit (at most one 16 KiB zlib chunk past it)',
  async (t) => {
    const member = zlib.gzipSync(Buffer.alloc(1024 * 1024), { level: 9 })
    let sent = 0
    const source = new Readable({
      read() {
        this.push(sent++ < 1024 ? member : null)
      },
    })
    const limit = 1024 * 1024
    const body = new InflatedBody(source as never, 'gzip', limit)
    const error = await new Promise<Error>((resolve) => {
      body.on('error', resolve)
      body.resume()
    })
    t.equal(error.message, 'Request body is too large')
    t.equal((error as { statusCode?: number }).statusCode, 413)
    t.ok(body.inflatedLength <= limit + 16 * 1024, `inflated ${body.inflatedLength} bytes of 1 GiB`)
    t.ok(sent < 1024, `read ${sent} of 1024 compressed members`)
  },
)

t.test('responses: compressed when Accept-Encoding accepts it, over the threshold, with Vary', async (t) => {
  const port = await start(t, { compression: true })
  const expected = { text: 'task title and description '.repeat(200) }
  const inflate: Record<string, (b: Buffer) => Buffer> = {
    gzip: zlib.gunzipSync,
    deflate: zlib.inflateSync,
    br: zlib.brotliDecompressSync,
  }
  for (const [accept, coding] of [
    ['gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['br', 'br'],
    ['gzip, deflate, br', ZSTD_AVAILABLE ? 'br' : 'br'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['br;q=0, *', ZSTD_AVAILABLE ? 'zstd' : 'gzip'],
  ] as const) {
    const res = await send(port, 'GET', '/big', { 'accept-encoding': accept })
    t.equal(res.status, 200)
    t.equal(res.headers['content-encoding'], coding, accept)
    t.equal(res.headers.vary, 'Accept-Encoding')
    t.ok(res.body.length < 200, `${coding}: ${res.body.length} bytes for ${JSON.stringify(expected).length}`)
    if (coding !== 'zstd')
      t.same(JSON.parse((inflate[coding] as (b: Buffer) => Buffer)(res.body).toString()), expected)
  }
  for (const accept of [undefined, 'identity', 'gzip;q=0', 'compress']) {
    const res = await send(port, 'GET', '/big', accept ? { 'accept-encoding': accept } : {})
    t.equal(res.headers['content-encoding'], undefined, `${accept}: not compressed`)
    t.equal(res.headers.vary, 'Accept-Encoding', 'but varies')
    t.same(json(res), expected)
  }
  const small = await send(
    port,
    'POST',
    '/echo',
    { ...JSON_HEADERS, 'accept-encoding': 'gzip' },
    Buffer.from('{"text":"hi"}'),
  )
  t.equal(small.headers['content-encoding'], undefined, 'under the threshold: plain')
  t.equal(small.headers.vary, undefined)
  const stream = await send(port, 'GET', '/ticks', { 'accept-encoding': 'gzip' })
  t.equal(stream.headers['content-encoding'], undefined, 'event streams are never compressed')
  t.match(stream.body.toString(), /event: item/)
})

t.test('responses are not compressed without the option; the option is validated', async (t) => {
  const port = await start(t)
  const res = await send(port, 'GET', '/big', { 'accept-encoding': 'gzip' })
  t.equal(res.headers['content-encoding'], undefined)
  t.equal(res.headers.vary, undefined)
  for (const [value, message] of [
    [{ threshold: -1 }, '@trivium/core: compression threshold must be an integer of at least 0 (bytes)'],
    [{ encodings: [] }, '@trivium/core: compression encodings must be a non-empty list'],
    ['gzip', '@trivium/core: compression must be true, false or { threshold, encodings }'],
  ] as const) {
    const app = Fastify()
    await t.rejects(async () => app.register(trivium, { compression: value as never }).ready(), {
      code: 'TRV_CORE_COMPRESSION',
      message,
    })
  }
  if (!ZSTD_AVAILABLE) {
    const app = Fastify()
    await t.rejects(async () => app.register(trivium, { compression: { encodings: ['zstd'] } }).ready(), {
      message:
        '@trivium/core: compression encodings: "zstd" is not available (this Node offers br, gzip, deflate; zstd needs Node >= 22.15)',
    })
  }
})
