// Issue 30.2 and 30.6 at the core level, over real sockets: an SSE stream is a session of the push
// hub (closeSessions ends it with the 401 error event) and app.close() ends it with the 503 one; the
// drain closes keep-alive connections and answers a call arriving during it with the 503 error body.
import { once } from 'node:events'
import net from 'node:net'
import trivium, { type TriviumCall } from '@trivium/core'
import { SessionHub } from '@trivium/wire/sessions'
import Fastify, { type FastifyInstance } from 'fastify'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

/** A stream that yields nothing and waits for its call's signal (as `tasks.watch` between events). */
function registerWatch(fastify: FastifyInstance, aborted: string[]) {
  // The identity auth would set: the token id in a header.
  fastify.trivium.use((call, next) => {
    const token = call.headers['x-token']
    if (typeof token === 'string') {
      call.identity = { userId: `user-${token}`, tokenId: token, roles: [], permissions: [] }
    }
    return next()
  })
  fastify.trivium.stream(
    'watch',
    { method: 'GET', url: '/watch' },
    async function* (_req, call: TriviumCall) {
      await new Promise((resolve) => call.signal.addEventListener('abort', resolve))
      aborted.push(String(call.headers['x-token']))
      yield* []
    },
  )
}

/** Opens /watch on its own connection; `text` grows as bytes arrive, `ended` when the server ends it. */
function openWatch(port: number, token: string) {
  const socket = net.connect(port, '127.0.0.1')
  const state = { text: '', ended: false }
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    state.text += chunk
    if (state.text.endsWith('0\r\n\r\n')) state.ended = true // the last chunk of the response
  })
  socket.write(`GET /watch HTTP/1.1\r\nHost: x\r\nX-Token: ${token}\r\n\r\n`)
  return { socket, state }
}

async function until(condition: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + waitBound(ms)
  while (!condition() && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
  return condition()
}

function errorEvent(text: string): unknown {
  const m = /event: error\ndata: (.*)\n\n/.exec(text)
  return m ? JSON.parse(m[1]!) : undefined
}

t.test('closeSessions ends the SSE streams of the token with the 401 error event', async (t) => {
  const fastify = Fastify({ forceCloseConnections: true })
  await fastify.register(trivium)
  const aborted: string[] = []
  registerWatch(fastify, aborted)
  const hub = new SessionHub()
  fastify.trivium.sessionHub = hub
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as net.AddressInfo
  const revoked = openWatch(port, 'a')
  const other = openWatch(port, 'b')
  t.ok(
    await until(
      () => revoked.state.text.includes(': stream open') && other.state.text.includes(': stream open'),
    ),
  )
  t.equal(hub.size, 2, 'each open stream is a session of the hub')

  t.equal(hub.closeSessions({ tokenId: 'a' }, 'Token has been revoked'), 1)
  t.ok(await until(() => revoked.state.ended), 'the response ends')
  t.match(errorEvent(revoked.state.text), {
    statusCode: 401,
    code: 'TRV_UNAUTHORIZED',
    error: 'UnauthorizedException',
    message: 'Token has been revoked',
  })
  t.ok(await until(() => aborted.includes('a')), "the handler's call.signal aborted")
  t.notOk(other.state.ended, 'a stream of another token stays open')
  t.equal(hub.closeSessions({ userId: 'user-b' }, 'Session revoked'), 1, 'found by user too')
  t.ok(await until(() => other.state.ended))
  t.equal(hub.size, 0, 'ended streams leave the hub')
  revoked.socket.destroy()
  other.socket.destroy()
})

t.test(
  'app.close(): SSE 503 event, keep-alive connections closed, a call during the drain gets the error body',
  async (t) => {
    const fastify = Fastify({ return503OnClosing: false })
    await fastify.register(trivium)
    const aborted: string[] = []
    registerWatch(fastify, aborted)
    let release: () => void = () => {}
    let entered = false
    fastify.trivium.endpoint('slow', { method: 'GET', url: '/slow' }, async () => {
      entered = true
      await new Promise<void>((r) => {
        release = r
      })
      return { done: true }
    })
    fastify.trivium.endpoint('ping', { method: 'GET', url: '/ping' }, () => ({ pong: true }))
    await fastify.listen({ port: 0, host: '127.0.0.1' })
    // Counted where Node hands requests to the server: one arriving during the drain is refused before
    // any Fastify hook runs.
    let received = 0
    fastify.server.on('request', () => {
      received++
    })
    const { port } = fastify.server.address() as net.AddressInfo

    const stream = openWatch(port, 'a')
    // An idle keep-alive connection (one call answered) and one with a call in flight.
    const idle = net.connect(port, '127.0.0.1')
    let idleText = ''
    idle.setEncoding('utf8')
    idle.on('data', (c: string) => {
      idleText += c
    })
    const idleClosed = once(idle, 'close')
    idle.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n')
    const busy = net.connect(port, '127.0.0.1')
    let busyText = ''
    busy.setEncoding('utf8')
    busy.on('data', (c: string) => {
      busyText += c
    })
    const busyClosed = once(busy, 'close')
    busy.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n')
    t.ok(
      await until(
        () => stream.state.text.includes(': stream open') && idleText.includes('"pong"') && entered,
      ),
    )

    const closed = fastify.close()
    t.ok(await until(() => stream.state.ended), 'the SSE response ends')
    t.match(errorEvent(stream.state.text), {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: 'Server is shutting down',
    })
    // A call arriving during the drain, pipelined behind the call in flight; then the call in flight ends.
    busy.write('GET /ping HTTP/1.1\r\nHost: x\r\n\r\n')
    t.ok(await until(() => received === 4), 'the server read the call arriving during the drain')
    release()
    await Promise.all([closed, idleClosed, busyClosed])
    t.pass('app.close() resolved and every connection was closed')
    const answers = busyText.split('HTTP/1.1 ').slice(1)
    t.equal(answers.length, 2)
    t.match(answers[0], /^200 OK/)
    t.match(answers[0], /\{"done":true\}$/)
    t.match(answers[1], /^503 Service Unavailable/)
    t.match(answers[1], /\r\nconnection: close\r\n/i)
    t.match(answers[1], /content-type: application\/json; charset=utf-8/)
    const body = JSON.parse(answers[1]!.slice(answers[1]!.indexOf('\r\n\r\n') + 4))
    t.match(body, {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: 'Server is shutting down',
    })
    stream.socket.destroy()
  },
)
