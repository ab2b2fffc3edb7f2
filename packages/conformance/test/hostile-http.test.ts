// Issue 29 item 1 on the conformance app (core, codec, auth, RBAC, rate limiting, WebSocket, TCP in
// inject mode): every route gets hostile requests over raw sockets and the process still answers; a
// Server-Sent Events stream whose client resets mid-stream stops its handler and ends nothing else.
import net from 'node:net'
import t from 'tap'
import { waitBound } from '../../../scripts/test/waits.js'
import { startConformanceServer } from '../dist/server.js'
import { routesOf, sweepRoutes } from './hostile-http.ts'

t.test('every route of the conformance app survives hostile bodies over raw sockets', async (t) => {
  const server = await startConformanceServer({ tcpMode: 'inject' })
  t.teardown(() => server.close())
  const routes = routesOf(server.app).map((r) => `${r.method} ${r.path}`)
  for (const expected of ['POST /echo', 'POST /count', 'GET /ticker/1', 'GET /ws', 'GET /ping'])
    t.ok(routes.includes(expected), `the route table has ${expected}`)
  await sweepRoutes(t, server.app, {
    bodyLimit: server.app.trivium.bodyLimit,
    alive: '/ping',
    // An upgrade request to a route that is not /ws gets ws's own `400 text/html` (issue 29 item 3).
    skipBodyCheck: (name) => name.endsWith('Upgrade: websocket with a body') && !name.startsWith('GET /ws:'),
  })
})

t.test('an event stream reset by its client mid-stream stops the handler; the process answers', async (t) => {
  const server = await startConformanceServer({ tcpMode: 'inject' })
  t.teardown(() => server.close())
  const port = Number(new URL(server.httpUrl).port)
  const { member } = await server.tokensFor(29)
  const runId = 'hostile-reset'
  const body = JSON.stringify({ runId })
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  socket.write(
    `POST /ticker HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${member}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  )
  let seen = ''
  await new Promise<void>((resolve) => {
    socket.on('data', (chunk) => {
      seen += chunk
      if (seen.includes('event: item')) resolve()
    })
  })
  t.match(seen, /^HTTP\/1\.1 200 /, 'the stream opened')
  socket.resetAndDestroy()
  const deadline = Date.now() + waitBound(10_000)
  while (!server.tickerFinished(runId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  t.ok(server.tickerFinished(runId), "the handler's finally ran")
  const ping = await fetch(`${server.httpUrl}/ping`)
  t.equal(ping.status, 200, 'the process answers')
})
