// The browser entry bundles for the browser (esbuild, platform 'browser') with no Node-only import,
// and the bundle works: it is loaded as is and drives a real server over HTTP and WebSocket.
import { createRequire } from 'node:module'
import { build } from 'esbuild'
import t from 'tap'
import WebSocket from 'ws'
import { endpoints, startServer } from './fixture.js'

const require = createRequire(import.meta.url)
const entry = require.resolve('@trivium/client')

const result = await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'browser',
  format: 'esm',
  write: false,
  metafile: true,
  logLevel: 'silent',
})

const code = result.outputFiles[0]?.text ?? ''

t.test('the browser entry bundles without Node-only imports', async (t) => {
  t.equal(result.errors.length, 0)
  t.notMatch(code, /["']node:/, 'no node: specifier')
  t.notMatch(code, /require\(/, 'no require()')
  const inputs = Object.keys(result.metafile?.inputs ?? {})
  t.ok(
    inputs.some((p) => p.includes('wire')),
    '@trivium/wire is bundled',
  )
  for (const forbidden of ['undici', '/ws/', '@fastify', '@trivium/core', 'packages/core']) {
    t.notOk(
      inputs.some((p) => p.includes(forbidden)),
      `${forbidden} is not in the bundle`,
    )
  }
})

t.test('the bundle runs: HTTP and WebSocket calls against a real server', async (t) => {
  const server = await startServer({ frames: true })
  t.teardown(() => server.app.close())
  const mod = await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)
  const http = mod.createClient({ transport: 'http', url: server.url, endpoints })
  t.same(await http.call('echo', { text: 'from the bundle' }), { text: 'from the bundle' })
  const err = await http.call('fail', { kind: 'forbidden' }).catch((e: unknown) => e)
  t.ok(err instanceof mod.ForbiddenException)
  await http.close()
  // a browser has a global WebSocket; Node 20 does not, so hand the bundle `ws` in its place
  const ws = mod.createClient({ transport: 'websocket', url: server.wsUrl, endpoints, WebSocket })
  t.same(await ws.call('echo', { text: 'ws bundle' }), { text: 'ws bundle' })
  await ws.close()
  t.throws(() => mod.createClient({ transport: 'websocket', url: server.wsUrl, endpoints }), {
    message:
      '@trivium/client: no WebSocket available: pass the WebSocket option (in Node, use @trivium/client/node)',
  })
  t.throws(() => mod.createClient({ transport: 'tcp', port: 1 }), {
    message: '@trivium/client: unknown transport "tcp"',
  })
})
