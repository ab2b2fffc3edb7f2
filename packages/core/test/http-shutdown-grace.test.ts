// Issue 40 item 8: one shutdown grace for every transport. HTTP unary calls in flight when app.close()
// begins get `shutdownGraceMs` to answer; those still running then are aborted (`call.signal`, reason
// ServiceUnavailableException) and answered 503 `Server is shutting down` with `Connection: close`, and
// close resolves: it never waits for a handler's own time. Over real sockets.
import { once } from 'node:events'
import net from 'node:net'
import trivium, { type TriviumCall } from '@trivium/core'
import Fastify from 'fastify'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'

const GRACE_MS = 400

interface Line {
  level: number
  msg: string
}

/** One request on its own connection; resolves with the raw response once the server closes it. */
function request(port: number, path: string): { response: Promise<string>; socket: net.Socket } {
  const socket = net.connect(port, '127.0.0.1')
  let text = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    text += chunk
  })
  socket.on('error', () => {})
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
  return { socket, response: once(socket, 'close').then(() => text) }
}

function parse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n')
  const [status = '', ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  )
  return { status: Number(status.split(' ')[1]), headers, body: body ? JSON.parse(body) : undefined }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + waitBound(5000)
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

t.test('HTTP unary calls still running after the grace are aborted and answered 503', async (t) => {
  const lines: Line[] = []
  const app = Fastify({
    logger: { level: 'info', stream: { write: (l: string) => lines.push(JSON.parse(l)) } },
  })
  await app.register(trivium, { shutdownGraceMs: GRACE_MS })
  const running = new Set<string>()
  const reasons: unknown[] = []
  let releaseLate = () => {}
  const late = new Promise<void>((resolve) => {
    releaseLate = resolve
  })
  let releaseQuick = () => {}
  const quick = new Promise<void>((resolve) => {
    releaseQuick = resolve
  })
  // Honours its signal: ends when the call is aborted.
  app.trivium.endpoint('listens', { method: 'GET', url: '/listens' }, async (_req, call: TriviumCall) => {
    running.add('listens')
    await new Promise((resolve) => call.signal.addEventListener('abort', resolve))
    reasons.push(call.signal.reason)
    throw call.signal.reason
  })
  // Ignores its signal and answers after the cut: its late value is dropped, never a second answer.
  app.trivium.endpoint('ignores', { method: 'GET', url: '/ignores' }, async () => {
    running.add('ignores')
    await late
    return { late: true }
  })
  // Answers within the grace: answered normally.
  app.trivium.endpoint('quick', { method: 'GET', url: '/quick' }, async () => {
    running.add('quick')
    await quick
    return { quick: true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as net.AddressInfo).port

  const calls = ['listens', 'ignores', 'quick'].map((name) => request(port, `/${name}`))
  await until(() => running.size === 3, 'the three handlers to run')
  const started = Date.now()
  const closed = app.close()
  releaseQuick()
  const [listens, ignores, quickAnswer] = await Promise.all(calls.map((c) => c.response))

  const done = parse(quickAnswer ?? '')
  t.equal(done.status, 200, 'a call answering within the grace is answered')
  t.same(done.body, { quick: true })
  for (const [name, raw] of [
    ['listens', listens],
    ['ignores', ignores],
  ] as const) {
    const res = parse(raw ?? '')
    t.equal(res.status, 503, `${name}: 503`)
    t.equal(res.headers.connection, 'close', `${name}: the connection closes`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    t.match(res.body, {
      statusCode: 503,
      code: 'TRV_SERVICE_UNAVAILABLE',
      error: 'ServiceUnavailableException',
      message: 'Server is shutting down',
      requestId: /^req-/,
    })
  }
  t.equal(reasons.length, 1, 'the signal of the call still running was aborted')
  t.match(reasons[0], { name: 'ServiceUnavailableException', message: 'Server is shutting down' })

  await closed
  const elapsed = Date.now() - started
  t.ok(elapsed >= GRACE_MS - 20, `close waited the grace (${elapsed} ms)`)
  t.ok(elapsed < GRACE_MS + waitBound(1000), `and not the handlers' time (${elapsed} ms)`)

  releaseLate()
  // The late value settles in the next turns; a second answer would log Fastify's warning there.
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r))
  t.same(
    lines.filter((l) => l.level >= 40).map((l) => [l.level, l.msg]),
    [
      [40, 'call still running after the shutdown grace: aborted'],
      [40, 'call still running after the shutdown grace: aborted'],
    ],
    'one warning per call cut; the late value and the aborted error are not logged again',
  )
})

t.test('a close with no call in flight does not wait for the grace', async (t) => {
  const app = Fastify()
  await app.register(trivium, { shutdownGraceMs: 9000 })
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello' }, async () => ({ hello: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as net.AddressInfo).port
  t.equal((await fetch(`http://127.0.0.1:${port}/hello`)).status, 200)
  const started = Date.now()
  await app.close()
  t.ok(Date.now() - started < 9000, 'closed before the grace')
})

t.test('shutdownGraceMs is checked as the frame transports check it', async (t) => {
  await t.rejects(async () => Fastify().register(trivium, { shutdownGraceMs: 0 }).ready(), {
    code: 'TRV_SETUP_SHUTDOWN_GRACE',
    message: '@trivium/core: shutdownGraceMs must be an integer of at least 1 (got 0)',
  })
  await t.rejects(
    async () => Fastify({ pluginTimeout: 1000 }).register(trivium, { shutdownGraceMs: 1000 }).ready(),
    {
      code: 'TRV_SETUP_SHUTDOWN_GRACE_TIMEOUT',
      message:
        "@trivium/core: shutdownGraceMs (1000) must be less than Fastify's pluginTimeout (1000), or app.close() fails; lower it or raise pluginTimeout",
    },
  )
})
