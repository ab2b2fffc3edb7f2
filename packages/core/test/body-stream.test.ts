// Issue 29 item 1: the UTF-8 check of JSON bodies over real sockets. A body cut anywhere (two writes,
// byte by byte, chunked) arrives intact; a bad byte anywhere, or a body ending inside a character,
// is refused; the check raises nothing once Fastify's reader stopped listening (body over the limit)
// and reads nothing before that reader does (an upload aborted while a hook runs).
import net, { type AddressInfo } from 'node:net'
import trivium, { jsonSchemaModel } from '@trivium/core'
import Fastify from 'fastify'
import type { Test } from 'tap'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { byteByByte, exchange, type RawResponse } from '../../conformance/test/hostile-http.ts'

const Echo = jsonSchemaModel<{ text: string }>('Echo', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})

type Lines = Record<string, unknown>[]

async function app(t: Test) {
  const lines: Lines = []
  const fastify = Fastify({
    logger: { level: 'info', stream: { write: (l: string) => lines.push(JSON.parse(l)) } },
  })
  await fastify.register(trivium, { bodyLimit: 4096 })
  const held = new Set<string>()
  // Holds a request until its client is gone: the body reader starts after the abort.
  fastify.addHook('onRequest', async (request) => {
    if (request.headers['x-hold'] === undefined) return
    held.add(request.id)
    const deadline = Date.now() + waitBound(10_000)
    while (!request.raw.destroyed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
  })
  fastify.trivium.endpoint('echo', { method: 'POST', url: '/echo', request: Echo }, (req) => req)
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const port = (fastify.server.address() as AddressInfo).port
  async function post(parts: Buffer[], headers = ''): Promise<RawResponse | undefined> {
    const length = parts.reduce((n, p) => n + p.length, 0)
    const head = `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${headers}\r\n`
    const [res] = await exchange(port, { name: 'post', parts: [Buffer.from(head), ...parts], finish: 'end' })
    return res
  }
  return { port, post, lines, held }
}

const message = (res: RawResponse | undefined) =>
  res ? JSON.parse(res.body.toString()).message : 'no answer'

t.test('a valid body cut at every byte, or written byte by byte, arrives intact', async (t) => {
  const { post } = await app(t)
  const text = 'a€😀b\u00e9'
  const body = Buffer.from(JSON.stringify({ text }))
  const wrong: string[] = []
  for (let i = 1; i < body.length; i++) {
    const res = await post([body.subarray(0, i), body.subarray(i)])
    if (res?.status !== 200 || JSON.parse(res.body.toString()).text !== text)
      wrong.push(`cut at ${i}: ${res?.status}`)
  }
  t.same(wrong, [], `cut at each of ${body.length - 1} points`)
  const res = await post(byteByByte(body))
  t.equal(res?.status, 200)
  t.same(JSON.parse(res?.body.toString() ?? '{}'), { text }, 'byte by byte')
})

t.test('a bad byte anywhere, or a body ending inside a character, is refused as not UTF-8', async (t) => {
  const { post } = await app(t)
  const valid = Buffer.from(JSON.stringify({ text: 'a€😀b' }))
  const wrong: string[] = []
  for (let i = 0; i <= valid.length; i++) {
    const body = Buffer.concat([valid.subarray(0, i), Buffer.from([0xff]), valid.subarray(i)])
    const res = await post([body.subarray(0, i), body.subarray(i)].filter((p) => p.length > 0))
    if (res?.status !== 400 || message(res) !== 'Request body is not valid UTF-8')
      wrong.push(`0xFF at ${i}: ${message(res)}`)
  }
  t.same(wrong, [], `0xFF at each of ${valid.length + 1} positions, the body cut there`)
  const refused = [
    Buffer.from('{"text":"\xe2\x82', 'latin1'), // ends inside a 3-byte character
    Buffer.from('{"text":"\xf0\x9f\x98', 'latin1'), // inside a 4-byte character
    Buffer.from('{"text":"\xc0\xaf"}', 'latin1'), // overlong
    Buffer.from('{"text":"\xed\xa0\x80"}', 'latin1'), // an encoded surrogate
    Buffer.from('{"text":"\xe2\x82A"}', 'latin1'), // a character broken by its last byte
  ]
  for (const body of refused) {
    t.equal(message(await post([body])), 'Request body is not valid UTF-8', `${body.toString('hex')} whole`)
    t.equal(
      message(await post(byteByByte(body))),
      'Request body is not valid UTF-8',
      `${body.toString('hex')} byte by byte`,
    )
  }
})

t.test('a bad byte after the body limit, where Fastify stopped listening, ends nothing', async (t) => {
  const { port, post } = await app(t)
  const big = Buffer.alloc(20_000, 0x61)
  big[big.length - 1] = 0xff
  const chunk = (b: Buffer) =>
    Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')])
  const head =
    'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
  for (const finish of ['end', 'reset'] as const) {
    const [res] = await exchange(port, {
      name: `over the limit, ${finish}`,
      parts: [
        Buffer.from(head),
        chunk(Buffer.from('{"text":"')),
        chunk(big.subarray(0, 8000)),
        chunk(big.subarray(8000)),
        Buffer.from('0\r\n\r\n'),
      ],
      finish,
    })
    if (finish === 'end') t.equal(message(res), 'Request body is too large')
  }
  t.equal((await post([Buffer.from('{"text":"alive"}')]))?.status, 200, 'the process answers')
})

t.test('an upload aborted before the body reader starts: logged as aborted, nothing hangs', async (t) => {
  const { port, post, lines, held } = await app(t)
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write(
    'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nx-hold: 1\r\n\r\n{"text":"\xff',
    'latin1',
  )
  const deadline = Date.now() + waitBound(10_000)
  while (held.size === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
  socket.resetAndDestroy()
  const [id] = held
  while (!lines.some((l) => l.requestId === id) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 5))
  t.same(
    lines.filter((l) => l.requestId === id).map((l) => [l.level, l.msg]),
    [[30, 'request aborted by the client']],
  )
  t.equal((await post([Buffer.from('{"text":"alive"}')]))?.status, 200, 'the process answers')
})
