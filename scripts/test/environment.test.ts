// The test command prepares a fresh machine itself (issue 18): it starts Redis/PostgreSQL when installed and
// down, installs chromium when it can, and says what it did in one line.
import { spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import t from 'tap'
import { chromium, listening, prepare, redis, which } from '../environment.mjs'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  await new Promise((r) => server.close(r))
  return port
}

t.test('one line: running services and the browser found as they are', async (t) => {
  t.equal(await prepare(), 'test environment: PostgreSQL running, Redis running, chromium present')
})

t.test('Redis installed but down on its port is started', { skip: !which('redis-server') }, async (t) => {
  const target = { host: '127.0.0.1', port: await freePort() }
  t.equal(await listening(target), false)
  t.equal(await redis(target), 'Redis started')
  t.teardown(() => {
    spawnSync('redis-cli', ['-p', String(target.port), 'shutdown', 'nosave'])
  })
  t.equal(await listening(target), true)
  t.equal(await redis(target), 'Redis running')
})

t.test('chromium missing and no way to install it says so', async (t) => {
  t.equal(
    chromium('/nonexistent/chromium', null),
    'chromium missing at /nonexistent/chromium, cannot install it without root (the browser test will fail)',
  )
})
