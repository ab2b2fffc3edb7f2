// Entry point: `pnpm start` at the repository root runs this. Graceful shutdown on SIGINT/SIGTERM:
// WebSocket/TCP clients get GOAWAY, streams of every transport end with the 503 error, calls in flight
// are answered within the grace, then connections close and the process exits 0.
import { buildApp } from './app.js'
import { loadConfig } from './config.js'
import { logOutput } from './log-output.js'
import { startTelemetry } from './telemetry.js'

let config: ReturnType<typeof loadConfig>
let demo: Awaited<ReturnType<typeof buildApp>>
// Readable at a terminal; error lines logged while starting are held until the start succeeded.
const logs = logOutput()
try {
  // A bad setting is refused here with its message alone (ConfigError), before anything listens.
  config = loadConfig()
  const stopTelemetry = startTelemetry()
  demo = await buildApp(config, logs.stream)
  if (stopTelemetry) demo.app.addHook('onClose', stopTelemetry)
} catch (err) {
  console.error(`Trivium Tasks failed to start: ${(err as Error).message}`)
  process.exit(1)
}
const { app, generatedAdminPassword } = demo

let closing = false
/** The default `shutdownGraceMs` of every transport: the longest a call in flight is waited for. */
const SHUTDOWN_GRACE_MS = 3000
/** After the grace @trivium/core answers HTTP calls still running (503); a request still arriving then is cut. */
const CUT_MARGIN_MS = 1000
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: draining in-flight requests and streams')
    const force = setTimeout(() => process.exit(1), 15_000)
    force.unref()
    // Calls still running after the grace are aborted by every transport (HTTP: 503, Connection: close);
    // a connection still sending its request then (a stalled upload) is cut.
    // (An h2c server has none of HTTP/1's connections; its sessions got GOAWAY from @trivium/core.)
    const server = app.server as { closeAllConnections?: () => void }
    const cut = setTimeout(() => server.closeAllConnections?.(), SHUTDOWN_GRACE_MS + CUT_MARGIN_MS)
    cut.unref()
    app.close().then(
      () => process.exit(0),
      (err) => {
        app.log.error({ err }, 'shutdown failed')
        process.exit(1)
      },
    )
  })
}

try {
  await app.listen({ host: config.host, port: config.port })
} catch (err) {
  console.error(`Trivium Tasks failed to start: ${listenFailure(err as NodeJS.ErrnoException)}`)
  process.exit(1)
}
logs.started()
const httpAddress = app.server.address()
const httpPort = typeof httpAddress === 'object' && httpAddress ? httpAddress.port : config.port
const tcp = app.hasDecorator('triviumTcp') ? app.triviumTcp.address() : undefined
const tls = config.http2 !== undefined && config.http2 !== 'h2c'
app.log.info(
  {
    http: `${tls ? 'https' : 'http'}://${config.host}:${httpPort}`,
    // h2c serves HTTP/2 alone: no HTTP/1.1, so no WebSocket upgrade on that port.
    ws: config.http2 === 'h2c' ? null : `${tls ? 'wss' : 'ws'}://${config.host}:${httpPort}/ws`,
    ...(config.http2 ? { http2: tls ? 'h2 over TLS, HTTP/1.1 on the same port' : 'h2c' } : {}),
    tcp,
  },
  'Trivium Tasks is up',
)
if (generatedAdminPassword) {
  // Printed once, on the first start, to the terminal (not to the structured log).
  process.stdout.write(
    `\n  Admin user created: ${config.adminUsername} / ${generatedAdminPassword}\n  (set ADMIN_PASSWORD to choose it; this is shown only once)\n\n`,
  )
}
// For scripts and tests that start the server on port 0.
if (process.env.TRIVIUM_PRINT_PORTS === '1') {
  process.stdout.write(`TRIVIUM_PORTS ${JSON.stringify({ http: httpPort, tcp: tcp?.port ?? null })}\n`)
}

/** A port that cannot be had names its setting; anything else is its message alone (no stack trace). */
function listenFailure(err: NodeJS.ErrnoException & { port?: number }): string {
  const setting = err.port === config.port ? 'PORT' : err.port === config.tcpPort ? 'TCP_PORT' : undefined
  const where = `${config.host}:${err.port}`
  if (setting && err.code === 'EADDRINUSE')
    return `${setting}: ${where} is already in use — stop what listens there or set another ${setting}`
  if (setting && err.code === 'EACCES')
    return `${setting}: ${where} needs privileges (ports below 1024) — set another ${setting}`
  if (err.code === 'EADDRNOTAVAIL')
    return `HOST: ${config.host} is not an address of this machine — use 127.0.0.1, 0.0.0.0 or one of its addresses`
  return err.message
}
