// Servers for bench/transports (run pinned to CPU 0): one Trivium app serving `hello` (public) and
// `secure` (needs a token, @trivium/auth with an in-memory revocation list) over HTTP, WebSocket and TCP
// direct; a second app, the same, with TCP in inject mode; a bare Fastify route; raw `ws` and raw `net`
// length-prefixed echo servers (the ceilings). Prints `PORTS {json}` and `TOKEN <access token>`.
// Both echo servers answer the way the Trivium transports do: replies produced in one event-loop turn
// leave in one socket write (net: one concatenated buffer; ws: one message per frame, socket corked
// until setImmediate).

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const pkg = (name) => new URL(`../../packages/${name}/dist/index.js`, import.meta.url).href
const requireWs = createRequire(new URL('../../packages/websocket/package.json', import.meta.url))
const Fastify = requireWs('fastify')
const { WebSocketServer } = requireWs('ws')
const { default: core, triviumFactoryOptions, triviumHttp2Options } = await import(pkg('core'))
const { default: websocket } = await import(pkg('websocket'))
const { default: tcp } = await import(pkg('tcp'))
const { default: auth } = await import(pkg('auth'))
const { TcpFrameReader, encodeTcpFrame } = await import(pkg('wire'))

const SECRET = 'bench-secret-bench-secret-bench-secret!'

/** A self-signed certificate for the h2-over-TLS app (made once per run with openssl). */
function selfSigned() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-h2-'))
  const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')]
  execFileSync(
    'openssl',
    [
      ...[
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
      ],
      ...['-keyout', key, '-out', cert, '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
    ],
    { stdio: 'pipe' },
  )
  return { key: readFileSync(key), cert: readFileSync(cert), certFile: cert }
}

async function triviumApp(tcpMode, withWs, http2) {
  const app = Fastify({
    ...triviumFactoryOptions(),
    ...(http2 ? triviumHttp2Options(http2) : {}),
    logger: false,
  })
  await app.register(core)
  await app.register(auth, { secret: SECRET, issuer: 'bench', cleanupIntervalMs: 0 })
  if (withWs) await app.register(websocket, { maxConnections: 10_000 })
  await app.register(tcp, { port: 0, mode: tcpMode, maxConnectionsPerIp: 1000 })
  app.trivium.endpoint('hello', { method: 'GET', url: '/hello', auth: 'public' }, () => ({ hello: 'world' }))
  app.trivium.endpoint('secure', { method: 'GET', url: '/secure' }, (_req, call) => ({
    hello: call.context.username,
  }))
  app.get('/bare', async () => ({ hello: 'world' }))
  // A named Fastify route (issue 41): called by name over WebSocket/TCP through the route itself.
  app.get(
    '/named-hello',
    { config: { triviumRoute: { name: 'named.hello', auth: 'public' } } },
    async () => ({
      hello: 'world',
    }),
  )
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

const main = await triviumApp('direct', true)
// With @trivium/websocket too (its route unused), so that the apps compared carry the same app-wide hooks:
// websocket's onRequest and onResponse run for every request of an app, bridged calls included (~4.5k of
// ~65k instructions per named route call, bench/transports/bridge-instructions.mjs BRIDGE_WEBSOCKET=1).
const injectApp = await triviumApp('inject', true)
// HTTP/2 (PROTOCOL.md "HTTP/2"): the same app served over h2 with TLS (ALPN) and over cleartext h2c.
const certificate = selfSigned()
const h2App = await triviumApp('direct', false, { key: certificate.key, cert: certificate.cert })
const h2cApp = await triviumApp('direct', false, 'h2c')
const token = await main.triviumAuth.issueAccessToken(
  { id: 1, username: 'bench', email: 'bench@example.com', roles: ['user'], permissions: [] },
  { ttlSeconds: 24 * 3600 },
)

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
wss.on('connection', (ws) => {
  let corked = false
  const uncork = () => {
    corked = false
    ws._socket.uncork()
  }
  ws.on('message', (data) => {
    if (!corked) {
      corked = true
      ws._socket.cork()
      setImmediate(uncork)
    }
    ws.send(data, { binary: true })
  })
})
await new Promise((r) => wss.once('listening', r))

// raw net: length-prefixed frames, each answered with a RESPONSE carrying `{"hello":"world"}` (17 bytes,
// the size of both endpoints' answers, so that a ceiling fed the `secure` frames, ~480 bytes of token
// metadata each, does not send them back), batched per event-loop turn (the ceiling)
const ANSWER = new TextEncoder().encode('{"hello":"world"}')
const net = createServer((socket) => {
  socket.setNoDelay(true)
  const reader = new TcpFrameReader()
  let queue = []
  let scheduled = false
  socket.on('error', () => {})
  socket.on('data', (chunk) => {
    for (const f of reader.push(chunk))
      queue.push(encodeTcpFrame({ type: 2, requestId: f.requestId, payload: ANSWER }))
    if (!scheduled) {
      scheduled = true
      setImmediate(() => {
        scheduled = false
        socket.write(queue.length === 1 ? queue[0] : Buffer.concat(queue))
        queue = []
      })
    }
  })
})
await new Promise((r) => net.listen(0, '127.0.0.1', r))

console.log(`TOKEN ${token}`)
console.log(
  `PORTS ${JSON.stringify({
    http: main.server.address().port,
    tcpDirect: main.triviumTcp.address().port,
    tcpInject: injectApp.triviumTcp.address().port,
    wsRaw: wss.address().port,
    netRaw: net.address().port,
    h2: h2App.server.address().port,
    h2c: h2cApp.server.address().port,
    certFile: certificate.certFile,
  })}`,
)
process.on('SIGTERM', () => process.exit(0))
