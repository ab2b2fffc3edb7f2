// Every refusal of the upgrade route is the JSON error body (PROTOCOL.md "WebSocket"), and a client
// breaking the WebSocket protocol cannot fill the server's log with stacks.
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { Writable } from 'node:stream'
import triviumCore from '@trivium/core'
import triviumWebSocket from '@trivium/websocket'
import Fastify from 'fastify'
import t from 'tap'
import { assertUnservedRefusal, buildApp, Client, sleep, until } from './helpers.ts'

interface RawResponse {
  status: number
  type: string | undefined
  body: Record<string, unknown> | string
}

function get(url: string, headers: Record<string, string>): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      let text = ''
      res.on('data', (c) => {
        text += c
      })
      res.on('end', () => {
        let body: RawResponse['body'] = text
        try {
          body = JSON.parse(text)
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

const upgrade = (extra: Record<string, string> = {}) => ({
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-version': '13',
  ...extra,
})

t.test('GET /ws without an upgrade: 400 with the error body (was an empty 404)', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const res = await get(url.replace('ws:', 'http:'), {})
  t.equal(res.status, 400)
  t.match(res.type, /^application\/json/)
  t.match(res.body, {
    statusCode: 400,
    code: 'TRV_VALIDATION',
    error: 'ValidationException',
    message: 'This route only accepts a WebSocket upgrade (GET with Upgrade: websocket)',
    requestId: /./,
  })
})

t.test('an upgrade without a valid Sec-WebSocket-Key: 400 JSON (was text/html from ws)', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const http = url.replace('ws:', 'http:')
  const cases: Array<Record<string, string>> = [
    { 'sec-websocket-key': '' },
    { 'sec-websocket-key': 'short' },
    { 'sec-websocket-version': '12' },
  ]
  for (const headers of cases) {
    const hs: Record<string, string> = upgrade(headers)
    if (hs['sec-websocket-key'] === '') delete hs['sec-websocket-key']
    const res = await get(http, hs)
    t.equal(res.status, 400, JSON.stringify(headers))
    t.match(res.type, /^application\/json/)
    t.match(res.body, {
      code: 'TRV_VALIDATION',
      message:
        'Invalid WebSocket handshake: Sec-WebSocket-Key must be 16 base64 bytes and Sec-WebSocket-Version 13',
    })
  }
})

t.test('Origin: same host allowed by default, others 403 Origin not allowed', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const host = new URL(url).host
  const ok = await Client.open(url, { origin: `http://${host}` })
  ok.ws.terminate()
  const noOrigin = await Client.open(url) // not a browser: no Origin header
  noOrigin.ws.terminate()
  const res = await get(url.replace('ws:', 'http:'), upgrade({ origin: 'https://evil.example' }))
  t.equal(res.status, 403)
  t.match(res.body, {
    statusCode: 403,
    code: 'TRV_FORBIDDEN',
    error: 'ForbiddenException',
    message: 'Origin not allowed',
  })
})

t.test('Origin: allowOrigin decides (e.g. the CORS origins)', async (t) => {
  const { app, url } = await buildApp({ allowOrigin: (origin) => origin === 'https://app.example' })
  t.teardown(() => app.close())
  const ok = await Client.open(url, { origin: 'https://app.example' })
  ok.ws.terminate()
  const host = new URL(url).host
  const res = await get(url.replace('ws:', 'http:'), upgrade({ origin: `http://${host}` }))
  t.equal(res.status, 403, 'the default same-host rule no longer applies')
})

t.test('a repeated format parameter is refused with 415, not a library message', async (t) => {
  const { app, url } = await buildApp()
  t.teardown(() => app.close())
  const res = await get(`${url.replace('ws:', 'http:')}?format=json&format=binary`, upgrade())
  t.equal(res.status, 415)
  t.match(res.body, { code: 'TRV_UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported format: json,binary' })
})

t.test('protocol violations are logged at warn without a stack, at most 10 a minute', async (t) => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  const app = Fastify({ logger: { level: 'info', stream } })
  await app.register(triviumCore)
  await app.register(triviumWebSocket)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const { port } = app.server.address() as { port: number }
  // 14 clients each send an unmasked frame (RFC 6455 requires client frames to be masked).
  for (let i = 0; i < 14; i++) {
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        )
      })
      socket.once('data', () => socket.write(Buffer.from([0x82, 0x01, 0x00])))
      socket.on('close', () => resolve())
      socket.on('error', () => resolve())
    })
  }
  const warnings = () => lines.filter((l) => l.msg === 'websocket client error')
  await until(() => warnings().length >= 10, 'ten warnings')
  await sleep(100) // a window in which an eleventh line would be written
  const errors = lines.filter((l) => (l.level as number) >= 50)
  t.same(errors, [], 'nothing at error level')
  const warned = warnings()
  t.equal(warned.length, 10, 'bounded: 10 lines for 14 violations')
  for (const line of warned) {
    t.equal(line.level, 40)
    t.notOk('err' in line || 'stack' in line, 'no stack or error object')
    t.equal(line.reason, 'Invalid WebSocket frame: MASK must be set')
  }
})

t.test(
  'an upgrade without Host: 400 naming the header (Node routes upgrades past its Host check)',
  async (t) => {
    const { app, url } = await buildApp()
    t.teardown(() => app.close())
    const { port } = new URL(url)
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          'GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        )
      })
      let data = ''
      socket.on('data', (c) => {
        data += c
      })
      socket.on('close', () => resolve(data))
      socket.on('error', reject)
    })
    const [head = '', body = ''] = answer.split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/)
    t.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i)
    t.match(JSON.parse(body), {
      statusCode: 400,
      code: 'TRV_VALIDATION',
      error: 'ValidationException',
      message: 'HTTP/1.1 requests must have a Host header',
      requestId: /./,
    })
  },
)

t.test(
  'an upgrade answered over HTTP (by an earlier hook, below the routes) closes its socket (issue 29)',
  async (t) => {
    // As @trivium/protections' CORS does for every OPTIONS: an onRequest hook registered before the
    // WebSocket plugin answers, so @fastify/websocket's own hooks never see the request.
    const app = Fastify()
    app.addHook('onRequest', (request, reply, done) => {
      if (request.method === 'OPTIONS')
        reply.code(403).type('text/plain; charset=utf-8').send('Origin not allowed')
      else done()
    })
    await app.register(triviumCore)
    await app.register(triviumWebSocket)
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.teardown(() => app.close())
    const { port } = app.server.address() as { port: number }
    // OPTIONS: answered by the hook; `/%zz` (bad percent-encoding): answered below the routes, no hook runs.
    for (const [method, path] of [
      ['OPTIONS', '/ws'],
      ['OPTIONS', '/elsewhere'],
      ['GET', '/%zz'],
    ]) {
      const socket = connect(port, '127.0.0.1')
      socket.on('error', () => {})
      let answer = ''
      socket.on('data', (c) => {
        answer += c
      })
      const closed = new Promise<boolean>((resolve) => {
        socket.on('close', () => resolve(true))
        setTimeout(() => resolve(false), 10_000).unref() // (must not keep the process alive once closed)
      })
      socket.end(
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      )
      t.ok(await closed, `${method} ${path}: the server closed the connection after its answer`)
      socket.destroy()
      t.match(answer, method === 'OPTIONS' ? /^HTTP\/1\.1 403 / : /^HTTP\/1\.1 400 /)
    }
  },
)

t.test(
  'an upgrade to a route other than the WebSocket path: 400 error body, the socket closed',
  async (t) => {
    const { app, url } = await buildApp()
    t.teardown(() => app.close())
    const { port } = new URL(url)
    const path = new URL(url).pathname
    for (const key of ['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n', '']) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            `GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${key}\r\n`,
          )
        })
        let data = ''
        socket.on('data', (c) => {
          data += c
        })
        socket.on('close', () => resolve(data))
        socket.on('error', reject)
      })
      assertUnservedRefusal(t, answer, path, key ? 'a valid handshake' : 'no key')
    }
  },
)
