// Brings what the tests need on a fresh machine of the kind the README describes (Debian, root or not):
// starts PostgreSQL and Redis when they are installed but down, installs Debian's `chromium` (without its
// recommends) when it is missing and apt-get can run, unless TRIVIUM_SKIP_BROWSER=1, then prints one line
// saying what it did. Never fails the run itself: a
// missing service shows up as the failing tests that need it, and the line says why.
import { spawnSync } from 'node:child_process'
import { accessSync, constants, readdirSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { pathToFileURL } from 'node:url'

export const POSTGRES = { host: '127.0.0.1', port: 5432 }
export const REDIS = { host: '127.0.0.1', port: 6379 }
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/** The browser and the libraries it needs, nothing recommended (recommends pulled 114 packages and upgraded systemd). */
export const CHROMIUM_INSTALL = ['install', '-y', '-q', '--no-install-recommends', 'chromium']

/** True when something accepts TCP connections on host:port within `ms`. */
export function listening({ host, port }, ms = 500) {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (up) => {
      socket.destroy()
      resolve(up)
    }
    socket.setTimeout(ms, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/** The full path of an executable found on PATH, or undefined. */
export function which(name, path = process.env.PATH ?? '') {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue
    try {
      accessSync(join(dir, name), constants.X_OK)
      return join(dir, name)
    } catch {}
  }
  return undefined
}

function executable(file) {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

async function waitFor(target, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await listening(target, 250)) return true
    await new Promise((r) => setTimeout(r, 250))
  }
  return false
}

function run(cmd, args, env) {
  return spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
}

/** apt-get can install when we are root, or when sudo works without a password. */
function aptCommand() {
  if (!which('apt-get')) return undefined
  if (process.getuid?.() === 0) return []
  if (which('sudo') && run('sudo', ['-n', 'true']).status === 0)
    return ['sudo', '-n', 'env', 'DEBIAN_FRONTEND=noninteractive']
  return undefined
}

async function postgres() {
  if (await listening(POSTGRES)) return 'PostgreSQL running'
  if (!which('pg_ctlcluster')) return 'PostgreSQL down and not installed (its tests will fail)'
  let versions = []
  try {
    versions = readdirSync('/etc/postgresql')
  } catch {}
  for (const version of versions)
    run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'])
  return (await waitFor(POSTGRES, 30))
    ? 'PostgreSQL started'
    : 'PostgreSQL down, could not start it (its tests will fail)'
}

export async function redis(target = REDIS) {
  if (await listening(target)) return 'Redis running'
  const server = which('redis-server')
  if (!server) return 'Redis down and not installed (its tests will fail)'
  run(server, [
    '--daemonize',
    'yes',
    '--bind',
    target.host,
    '--port',
    String(target.port),
    '--save',
    '',
    '--appendonly',
    'no',
  ])
  return (await waitFor(target, 15))
    ? 'Redis started'
    : 'Redis down, could not start it (its tests will fail)'
}

/** `prefix` is the command prefix that can run apt-get ([] as root), null or undefined when none can. */
export function chromium(path = CHROMIUM, prefix = aptCommand(), env = process.env) {
  if (env.TRIVIUM_SKIP_BROWSER === '1')
    return 'chromium not installed (TRIVIUM_SKIP_BROWSER=1: the browser tests are skipped)'
  if (executable(path)) return 'chromium present'
  if (!prefix)
    return `chromium missing at ${path}, cannot install it without root (the browser test will fail)`
  const log = join(tmpdir(), 'trivium-chromium-install.log')
  const [cmd, ...pre] = [...prefix, 'apt-get']
  const aptEnv = { DEBIAN_FRONTEND: 'noninteractive' }
  const update = run(cmd, [...pre, 'update', '-q'], aptEnv)
  const install = update.status === 0 ? run(cmd, [...pre, ...CHROMIUM_INSTALL], aptEnv) : update
  writeFileSync(
    log,
    `${update.stdout}${update.stderr}${install === update ? '' : `${install.stdout}${install.stderr}`}`,
  )
  return install.status === 0 && executable(path)
    ? 'chromium installed (apt-get)'
    : `chromium missing, apt-get failed (see ${log}; the browser test will fail)`
}

/** Does everything and returns the one line. */
export async function prepare() {
  const [pg, rd] = await Promise.all([postgres(), redis()])
  return `test environment: ${pg}, ${rd}, ${chromium()}`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await prepare())
}
