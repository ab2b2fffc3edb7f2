// Start-up checks of DATABASE_URL and REDIS_URL (README: a bad setting stops the start "with one line naming
// the setting and the fix"). A URL that points at the wrong place — nothing listening, a wrong password, an
// unknown database, a port that accepts and never answers, another server's port — is refused with a
// ConfigError naming the setting, what was reached (host:port: never the URL, which may hold a password)
// and the fix, instead of the stores' generic "unavailable" after their own retry timeouts.
import net from 'node:net'
import tls from 'node:tls'
import { ConfigError } from './config.js'

/** How long a start-up check waits for an answer (a black hole is refused after this). */
export const START_CHECK_TIMEOUT_MS = 5000

function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** The error codes of `err`, its cause and an AggregateError's errors (pg tries every address of a host). */
function codes(err: unknown, seen = new Set<unknown>()): string[] {
  if (typeof err !== 'object' || err === null || seen.has(err)) return []
  seen.add(err)
  const own = (err as { code?: unknown }).code
  return [
    ...(typeof own === 'string' ? [own] : []),
    ...codes((err as { cause?: unknown }).cause, seen),
    ...(err instanceof AggregateError ? err.errors.flatMap((e) => codes(e, seen)) : []),
  ]
}

/** The innermost error of a cause chain with a SQLSTATE (5 characters), for PostgreSQL's own message. */
function serverError(err: unknown): { code: string; message: string } | undefined {
  for (let e: unknown = err; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return { code, message: (e as Error).message }
  }
  return undefined
}

function allMessages(err: unknown): string {
  const out: string[] = []
  for (let e: unknown = err; e instanceof Error && out.length < 5; e = e.cause) out.push(e.message)
  if (err instanceof AggregateError) for (const e of err.errors) out.push(allMessages(e))
  return out.join(' / ')
}

function unreachable(setting: string, where: string, what: string, err: unknown): string | undefined {
  const all = codes(err)
  if (all.includes('ECONNREFUSED'))
    return `${setting}: connection refused at ${where} — is ${what} running there?`
  if (all.includes('ENOTFOUND') || all.includes('EAI_AGAIN'))
    return `${setting}: host ${where.replace(/:\d+$/, '')} not found — check the host name`
  if (all.includes('EHOSTUNREACH') || all.includes('ENETUNREACH'))
    return `${setting}: ${where} is unreachable — check the host name and the network`
  return undefined
}

/**
 * What a failed first connection of `DATABASE_URL` means, in one line. `timeoutMs` is the pool's
 * connection timeout (a server that accepts and never answers is refused after it).
 */
export function describeDatabaseError(url: string, err: unknown, timeoutMs: number): string {
  let where = 'the database server'
  try {
    const u = new URL(url)
    const host = u.searchParams.get('host') ?? (u.hostname.replace(/^\[|\]$/g, '') || 'localhost')
    where = hostPort(host, Number(u.searchParams.get('port') ?? (u.port || 5432)))
  } catch {}
  const server = serverError(err)
  if (server?.code === '28P01')
    return `DATABASE_URL: ${server.message} — check the user and password in the URL`
  if (server?.code === '3D000') return `DATABASE_URL: ${server.message} — create it or fix the path`
  if (server?.code === '28000')
    return `DATABASE_URL: ${server.message} — check the user in the URL (and the server's pg_hba.conf)`
  const network = unreachable('DATABASE_URL', where, 'PostgreSQL', err)
  if (network) return network
  const text = allMessages(err)
  if (/timeout/i.test(text))
    return `DATABASE_URL: no answer from ${where} within ${timeoutMs} ms — is that PostgreSQL's port?`
  if (server) return `DATABASE_URL: ${server.message} (SQLSTATE ${server.code})`
  // Closed, reset or answered something that is not the PostgreSQL protocol.
  return `DATABASE_URL: ${where} did not answer as PostgreSQL (${text}) — is that PostgreSQL's port?`
}

function command(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

/**
 * Connects to `REDIS_URL` once as ioredis would (AUTH with the URL's user and password, SELECT of its
 * database) and sends PING; throws a ConfigError naming the setting when that fails. URLs that are not
 * redis:// or rediss:// (a socket path) are left to ioredis.
 */
export async function checkRedis(url: string, timeoutMs = START_CHECK_TIMEOUT_MS): Promise<void> {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return
  const host = u.hostname.replace(/^\[|\]$/g, '') || 'localhost'
  const port = Number(u.port || 6379)
  const where = hostPort(host, port)
  const steps: Array<{ name: 'AUTH' | 'SELECT' | 'PING'; args: string[] }> = []
  const password = decodeURIComponent(u.password)
  const username = decodeURIComponent(u.username)
  if (password)
    steps.push({ name: 'AUTH', args: username ? ['AUTH', username, password] : ['AUTH', password] })
  const db = u.pathname.slice(1)
  if (db && db !== '0') steps.push({ name: 'SELECT', args: ['SELECT', db] })
  steps.push({ name: 'PING', args: ['PING'] })

  const failure = await new Promise<string | undefined>((resolve) => {
    const socket =
      u.protocol === 'rediss:'
        ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
        : net.connect({ host, port })
    let buffer = ''
    let step = 0
    const done = (message: string | undefined) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(message)
    }
    const timer = setTimeout(
      () => done(`REDIS_URL: no answer from ${where} within ${timeoutMs} ms — is that Redis's port?`),
      timeoutMs,
    )
    socket.on(u.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => {
      socket.write(steps.map((s) => command(s.args)).join(''))
    })
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1')
      for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const current = steps[step]!
        const reply = redisReply(current.name, line, where, db)
        if (reply === 'loading') {
          // Redis is loading its data set: ioredis waits for it, so does the check (within the deadline).
          setTimeout(() => socket.writable && socket.write(command(['PING'])), 100)
          continue
        }
        if (reply !== undefined) return done(reply)
        if (++step === steps.length) return done(undefined)
      }
      if (buffer.length > 512 || /^[^+-]/.test(buffer))
        done(`REDIS_URL: ${where} did not answer as Redis — is that Redis's port?`)
    })
    socket.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code
      const tlsFailure = u.protocol === 'rediss:' && !codes(err).some((c) => c.startsWith('E'))
      done(
        unreachable('REDIS_URL', where, 'Redis', err) ??
          (tlsFailure
            ? `REDIS_URL: TLS with ${where} failed (${err.message}) — check rediss:// and the server's certificate`
            : `REDIS_URL: ${where} did not answer as Redis (${code ?? err.message}) — is that Redis's port?`),
      )
    })
    socket.on('close', () =>
      done(`REDIS_URL: ${where} closed the connection without answering as Redis — is that Redis's port?`),
    )
  })
  if (failure !== undefined) throw new ConfigError(failure)
}

/** undefined = this step succeeded; 'loading' = ask again; otherwise the start-up line. */
function redisReply(step: 'AUTH' | 'SELECT' | 'PING', line: string, where: string, db: string) {
  if (step === 'PING' && line.startsWith('-LOADING')) return 'loading' as const
  if (line.startsWith('+')) return step === 'PING' && line !== '+PONG' ? notRedis(where) : undefined
  if (!line.startsWith('-')) return notRedis(where)
  const error = line.slice(1)
  const code = error.split(' ', 1)[0]
  // A password given to a Redis without one: ioredis warns and goes on, so the demo does too.
  if (step === 'AUTH' && /no password is set|without any password configured/.test(error)) return undefined
  if (code === 'WRONGPASS' || step === 'AUTH')
    return `REDIS_URL: authentication failed (${code}) — check the password in the URL`
  if (code === 'NOAUTH')
    return `REDIS_URL: Redis at ${where} requires a password (NOAUTH) — put it in the URL: redis://:<password>@${where}`
  if (step === 'SELECT')
    return `REDIS_URL: Redis at ${where} has no database ${db} (${error}) — fix the number after the port`
  return `REDIS_URL: Redis at ${where} answered PING with an error (${error})`
}

function notRedis(where: string): string {
  return `REDIS_URL: ${where} did not answer as Redis — is that Redis's port?`
}
