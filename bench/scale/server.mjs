// One demo instance (apps/demo, built) for bench/scale: the demo's own buildApp with the environment's
// configuration, no TCP, no logs; prints `LISTENING <port>` for the harness.
// The only change from `pnpm start`: tasks.list's rate limit is raised so that the load is not refused
// (429). The limit is still checked on every request, in the same store (memory or Redis Lua script).
// BENCH_DEMO_DIST: another build of the demo (e.g. a variant being measured), default apps/demo/dist.
const dist = process.env.BENCH_DEMO_DIST ?? new URL('../../apps/demo/dist/', import.meta.url).pathname
const { buildApp } = await import(`${dist}/app.js`)
const { loadConfig } = await import(`${dist}/config.js`)

const config = { ...loadConfig(process.env), port: 0, tcpPort: -1, logLevel: 'silent' }
const { app } = await buildApp(config)
const definition = app.trivium.registry.get('tasks.list')
definition.config.rateLimit = { requests: 1_000_000_000, windowMs: 60_000 }
await app.listen({ host: '127.0.0.1', port: 0 })
process.on('SIGTERM', () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  )
})
console.log(`LISTENING ${app.server.address().port}`)
