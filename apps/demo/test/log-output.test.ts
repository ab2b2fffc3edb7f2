// Logs (issue 33): readable lines at a terminal outside production, JSON lines otherwise; a start that fails
// prints its one line without the error lines (and stack traces) logged on the way.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { logOutput } from '../dist/log-output.js'
import { PrivateRedis } from './scale-helpers.js'

const SERVER = fileURLToPath(new URL('../dist/server.js', import.meta.url))
const line = (level: number, msg: string) =>
  `${JSON.stringify({ level, time: 0, pid: 1, hostname: 'h', msg })}\n`

function terminal(isTTY: boolean) {
  const out = Object.assign(new PassThrough(), { isTTY })
  let text = ''
  out.on('data', (chunk) => {
    text += chunk
  })
  return { out, text: () => text }
}

t.test('a terminal outside production gets pino-pretty lines', async (t) => {
  const term = terminal(true)
  const logs = logOutput(term.out, 'development')
  logs.started()
  logs.stream.write(line(30, 'Trivium Tasks is up'))
  await t.resolveMatch(
    new Promise((r) => setImmediate(() => r(term.text()))),
    /^\[\d\d:\d\d:\d\d\.\d{3}\] .*INFO.*: .*Trivium Tasks is up/,
  )
})

t.test('production, or not a terminal: JSON lines as written', async (t) => {
  for (const [isTTY, env] of [
    [true, 'production'],
    [false, undefined],
  ] as const) {
    const term = terminal(isTTY)
    const logs = logOutput(term.out, env)
    logs.started()
    logs.stream.write(line(30, 'up'))
    t.equal(term.text(), line(30, 'up'))
  }
})

t.test('error lines while starting are held, and written once started', async (t) => {
  const term = terminal(false)
  const logs = logOutput(term.out, undefined)
  logs.stream.write(line(40, 'a warning'))
  logs.stream.write(line(50, 'an error'))
  t.equal(term.text(), line(40, 'a warning'))
  logs.started()
  t.equal(term.text(), line(40, 'a warning') + line(50, 'an error'))
})

t.test(
  'a wrong Redis password: the start fails with its one line, no error lines or stacks before it',
  async (t) => {
    const redis = await PrivateRedis.create()
    t.teardown(() => redis.close())
    t.equal(
      spawnSync('redis-cli', ['-p', String(redis.port), 'config', 'set', 'requirepass', 'right']).status,
      0,
    )
    const dir = mkdtempSync(join(tmpdir(), 'trivium-log-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const child = spawn(process.execPath, [SERVER], {
      env: {
        ...process.env,
        DATA_DIR: dir,
        PORT: '0',
        TCP_PORT: '-1',
        REDIS_URL: `redis://:wrong@127.0.0.1:${redis.port}`,
        NODE_ENV: 'development',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (c) => {
      output += c
    })
    child.stderr.on('data', (c) => {
      output += c
    })
    const code = await new Promise((r) => child.once('exit', r))
    t.equal(code, 1)
    const lines = output.trimEnd().split('\n')
    t.equal(
      lines.at(-1),
      'Trivium Tasks failed to start: REDIS_URL: authentication failed (WRONGPASS) — check the password in the URL',
    )
    t.same(
      lines.filter((l) => /"level":(50|60)|\bat .*\(.*:\d+:\d+\)/.test(l)),
      [],
      'no error lines, no stack frames',
    )
  },
)
