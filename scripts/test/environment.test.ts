// The test command prepares a fresh machine itself (issue 18): it starts Redis/PostgreSQL when installed and
// down, installs chromium when it can, and says what it did in one line.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { chromium, listening, prepare, redis, which } from '../environment.mjs'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  await new Promise((r) => server.close(r))
  return port
}

t.test('one line: running services and the browser found as they are', async (t) => {
  const browser =
    process.env.TRIVIUM_SKIP_BROWSER === '1'
      ? 'chromium not installed (TRIVIUM_SKIP_BROWSER=1: the browser tests are skipped)'
      : 'chromium present'
  t.equal(await prepare(), `test environment: PostgreSQL running, Redis running, ${browser}`)
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
    chromium('/nonexistent/chromium', null, {}),
    'chromium missing at /nonexistent/chromium, cannot install it without root (the browser test will fail)',
  )
})

/** A stand-in for the command prefix (root / sudo): records each apt-get command line instead of running it. */
function recordingPrefix(t: Test): { prefix: string[]; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-apt-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const script = join(dir, 'record')
  const log = join(dir, 'commands')
  writeFileSync(script, `#!/bin/sh\necho "$@" >> ${log}\n`)
  chmodSync(script, 0o755)
  return { prefix: [script], log }
}

t.test('chromium is installed without recommends', async (t) => {
  const { prefix, log } = recordingPrefix(t)
  t.equal(
    chromium('/nonexistent/chromium', prefix, {}),
    `chromium missing, apt-get failed (see ${join(tmpdir(), 'trivium-chromium-install.log')}; the browser test will fail)`,
    'the stand-in installed nothing',
  )
  t.equal(
    readFileSync(log, 'utf8'),
    'apt-get update -q\napt-get install -y -q --no-install-recommends chromium\n',
  )
})

t.test('TRIVIUM_SKIP_BROWSER=1: no install, and the line says the browser tests are skipped', async (t) => {
  const { prefix, log } = recordingPrefix(t)
  t.equal(
    chromium('/nonexistent/chromium', prefix, { TRIVIUM_SKIP_BROWSER: '1' }),
    'chromium not installed (TRIVIUM_SKIP_BROWSER=1: the browser tests are skipped)',
  )
  t.equal(existsSync(log), false, 'apt-get not run')
})

// The file runs as scripts/test.mjs runs every test file (`node --import=<scripts/ts/register.mjs> --liftoff-only`),
// not under tap's runner, whose start cost ~8–20 s of CPU here (it rebuilds its plugin set) for the same TAP.
t.test('TRIVIUM_SKIP_BROWSER=1: a browser test reports itself skipped, not passed', async (t) => {
  const register = new URL('../ts/register.mjs', import.meta.url).href
  const file = 'apps/demo/test/docs-browser.test.ts'
  const r = spawnSync(process.execPath, [`--import=${register}`, '--liftoff-only', file], {
    encoding: 'utf8',
    env: { ...process.env, TRIVIUM_SKIP_BROWSER: '1', FORCE_COLOR: '0' },
  })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /ok 1 - Swagger UI at \/docs: .* # SKIP TRIVIUM_SKIP_BROWSER=1: no browser test/)
  t.notMatch(r.stdout, /# \{ total: \d+, pass: [1-9]/)
})
