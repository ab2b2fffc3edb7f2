// PROTOCOL.md "Compression": @trivium/core's HTTP compression next to @fastify/compress registered by the
// application — a body is compressed once, whichever registered first, and a compressed request body is
// inflated once (by @fastify/compress's own hook, which marks its stream as Fastify asks).
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gunzipSync, gzipSync } from 'node:zlib'
import fastifyCompress from '@fastify/compress'
import trivium, { jsonSchemaModel } from '@trivium/core'
import Fastify from 'fastify'
import type { Test } from 'tap'
import t from 'tap'

const Echo = jsonSchemaModel<{ text: string }>('Echo', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})
const TEXT = 'the same task title, again and again; '.repeat(300)

async function start(t: Test, order: 'compress-first' | 'trivium-first', coreCompression: boolean) {
  const app = Fastify()
  const core = () => app.register(trivium, { compression: coreCompression })
  if (order === 'compress-first') {
    await app.register(fastifyCompress, { global: true })
    await core()
  } else {
    await core()
    await app.register(fastifyCompress, { global: true })
  }
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo', request: Echo, response: Echo }, (b) => b)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return (app.server.address() as AddressInfo).port
}

function post(port: number, headers: Record<string, string>, body: Buffer) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/echo',
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks) }),
          )
        },
      )
      req.on('error', reject)
      req.end(body)
    },
  )
}

for (const order of ['compress-first', 'trivium-first'] as const) {
  for (const coreCompression of [true, false]) {
    t.test(
      `@fastify/compress and @trivium/core (${order}, core compression ${coreCompression}): compressed once`,
      async (t) => {
        const port = await start(t, order, coreCompression)
        const body = Buffer.from(JSON.stringify({ text: TEXT }))
        const res = await post(port, { 'accept-encoding': 'gzip' }, body)
        t.equal(res.status, 200)
        t.equal(res.headers['content-encoding'], 'gzip', 'one Content-Encoding')
        t.match(String(res.headers.vary), /accept-encoding/i)
        // One layer: inflating once gives the JSON (twice-compressed bytes would inflate to gzip again).
        t.same(JSON.parse(gunzipSync(res.body).toString()), { text: TEXT })
        // A gzip request body is inflated once (by @fastify/compress's preParsing hook) and read.
        const gz = await post(
          port,
          { 'content-encoding': 'gzip', 'accept-encoding': 'identity' },
          gzipSync(body),
        )
        t.equal(gz.status, 200)
        t.equal(gz.headers['content-encoding'], undefined)
        t.same(JSON.parse(gz.body.toString()), { text: TEXT })
      },
    )
  }
}
