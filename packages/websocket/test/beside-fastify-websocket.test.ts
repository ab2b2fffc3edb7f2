// Issue 40 item 2: a guest leaves the application's WebSocket routes as they were. The application's
// own @fastify/websocket route answers beside Trivium's /ws in every registration order (its plugin
// before Trivium, after it, or in a context of its own), with its own hooks and handler; Trivium's
// frames answer on /ws; an upgrade to a path nobody serves keeps the 400 error body; app.close()
// drains Trivium's connections and closes the application's.
import { connect } from 'node:net'
import fastifyWebsocket from '@fastify/websocket'
import triviumCore from '@trivium/core'
import triviumWebSocket from '@trivium/websocket'
import { FrameType } from '@trivium/wire'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import WebSocket from 'ws'
import { assertUnservedRefusal, Client, dec, until } from './helpers.ts'

const ORDERS = ['app plugin first', 'Trivium first', 'app plugin in its own context'] as const
type Order = (typeof ORDERS)[number]

interface Seen {
  onRequest: number
  preHandler: number
  handler: number
  /** `request.ws` in the handler (@fastify/websocket's request decorator). */
  requestWs: unknown[]
}

/** The application's routes, as it had them before Trivium: a WebSocket route and a plain one. */
function chatRoute(scope: FastifyInstance, seen: Seen): void {
  scope.get('/plain', async () => ({ plain: true }))
  scope.get<{ Querystring: { deny?: string } }>(
    '/chat',
    {
      websocket: true,
      onRequest: (request, reply, done) => {
        seen.onRequest++
        if (request.query.deny) reply.code(401).send({ app: 'not you' })
        else done()
      },
      preHandler: (_request, _reply, done) => {
        seen.preHandler++
        done()
      },
    },
    (socket, request) => {
      seen.handler++
      seen.requestWs.push(request.ws)
      socket.on('message', (message) => socket.send(`echo:${message}`))
    },
  )
}

async function build(order: Order, { trivium = true } = {}) {
  const app = Fastify({ logger: false })
  const seen: Seen = { onRequest: 0, preHandler: 0, handler: 0, requestWs: [] }
  let release = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let slowStarted = 0
  if (order === 'app plugin first') {
    await app.register(fastifyWebsocket)
    chatRoute(app, seen)
  }
  if (trivium) {
    await app.register(triviumCore)
    await app.register(triviumWebSocket)
    app.trivium.endpoint('echo', { method: 'POST', url: '/echo' }, (body) => body)
    app.trivium.endpoint('slow', { method: 'POST', url: '/slow' }, async () => {
      slowStarted++
      await gate
      return { done: true }
    })
  }
  if (order === 'Trivium first') {
    await app.register(fastifyWebsocket) // was FST_ERR_DEC_ALREADY_PRESENT 'ws'
    chatRoute(app, seen)
  }
  if (order === 'app plugin in its own context') {
    await app.register(async (scope) => {
      await scope.register(fastifyWebsocket)
      chatRoute(scope, seen)
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  return { app, port, seen, release, slowStarted: () => slowStarted }
}

/** The application's client: resolves with the socket once open, or the HTTP status it was refused with. */
function openChat(url: string): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    ws.once('open', () => resolve({ ws }))
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (c) => {
        body += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    ws.once('error', reject)
  })
}

function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (data) => resolve(String(data))))
}

/**
 * A raw upgrade request; resolves with what the server wrote: up to the end of the head when it
 * switched protocols (the socket is then destroyed), everything until it closed the connection otherwise.
 */
function rawUpgrade(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
      )
    })
    let data = ''
    socket.on('data', (c) => {
      data += c
      if (data.startsWith('HTTP/1.1 101 ') && data.includes('\r\n\r\n')) {
        socket.destroy()
        resolve(data.slice(0, data.indexOf('\r\n\r\n')))
      }
    })
    socket.on('close', () => resolve(data))
    socket.on('error', reject)
  })
}

const statusLine = (answer: string) => answer.slice(0, answer.indexOf('\r\n'))
const body = (answer: string) => answer.split('\r\n\r\n')[1]

for (const order of ORDERS) {
  t.test(`${order}: the application's WebSocket route and Trivium's /ws side by side`, async (t) => {
    const { app, port, seen, release, slowStarted } = await build(order)
    let closed = false
    t.teardown(() => (closed ? undefined : app.close()))
    const base = `ws://127.0.0.1:${port}`

    await t.test("the application's route echoes, through its own hooks and handler", async (t) => {
      const chat = await openChat(`${base}/chat`)
      if (!('ws' in chat)) throw new Error(`refused with ${chat.status}: ${chat.body}`)
      t.teardown(() => chat.ws.terminate())
      const reply = nextMessage(chat.ws)
      chat.ws.send('hi')
      t.equal(await reply, 'echo:hi')
      t.same(seen, { onRequest: 1, preHandler: 1, handler: 1, requestWs: [true] })
      const denied = await openChat(`${base}/chat?deny=1`)
      t.same(denied, { status: 401, body: '{"app":"not you"}' }, "its own hook's refusal, as it wrote it")
      t.equal(seen.handler, 1, 'the handler did not run for the refused upgrade')
    })

    await t.test("upgrades to the application's routes are answered as without Trivium", async (t) => {
      const before = await build(order, { trivium: false })
      t.teardown(() => before.app.close())
      const expected = {
        '/chat': 'HTTP/1.1 101 Switching Protocols',
        '/chat?deny=1': 'HTTP/1.1 401 Unauthorized',
        // @fastify/websocket upgrades a request to its route without a WebSocket handler, then closes it
        '/plain': 'HTTP/1.1 101 Switching Protocols',
      }
      for (const [path, status] of Object.entries(expected)) {
        const [withTrivium, without] = await Promise.all([
          rawUpgrade(port, path),
          rawUpgrade(before.port, path),
        ])
        t.equal(statusLine(without), status, `${path} without Trivium`)
        t.equal(statusLine(withTrivium), status, `${path} with Trivium`)
        t.equal(body(withTrivium), body(without), `${path}: the same bytes after the head`)
      }
    })

    await t.test("Trivium's frames answer on /ws", async (t) => {
      const handled = seen.handler
      const client = await Client.open(`${base}/ws?format=json`)
      t.teardown(() => client.ws.terminate())
      client.request(1, 'echo', { hello: order })
      const reply = await client.reply(1)
      t.equal(reply?.type, FrameType.RESPONSE)
      t.same(dec(reply?.payload as Uint8Array), { hello: order })
      t.equal(app.triviumWebSocket.connections, 1)
      t.equal(seen.handler, handled, "the application's handler did not run for /ws")
    })

    await t.test('an upgrade to a path nobody serves: 400 error body, the socket closed', async (t) => {
      assertUnservedRefusal(t, await rawUpgrade(port, '/nowhere'), '/ws')
    })

    await t.test(
      "app.close() drains Trivium's calls in flight (GOAWAY, RESPONSE, 1001) and closes the application's",
      async (t) => {
        const chat = await openChat(`${base}/chat`)
        if (!('ws' in chat)) throw new Error(`refused with ${chat.status}`)
        const chatClosed = new Promise<number>((resolve) => chat.ws.once('close', (code) => resolve(code)))
        const client = await Client.open(`${base}/ws?format=json`)
        client.request(7, 'slow', {})
        await until(() => slowStarted() === 1, 'the slow call to start')
        const closing = app.close()
        await client.until((frames) => frames.some((f) => f.type === FrameType.GOAWAY))
        release()
        await client.closed
        await closing
        closed = true
        const answered = client.frames.find((f) => f.requestId === 7)
        t.equal(answered?.type, FrameType.RESPONSE, 'the call in flight was answered before the close')
        t.same(dec(answered?.payload as Uint8Array), { done: true })
        t.equal(client.closeCode, 1001)
        t.ok(
          [1000, 1001, 1005].includes(await chatClosed),
          "the application's connection closed by its own plugin",
        )
      },
    )
  })
}
