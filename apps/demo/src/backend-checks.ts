// Start-up checks of DATABASE_URL and REDIS_URL (README: a bad setting stops the start "with one line naming
// the setting and the fix"). A URL that points at the wrong place — nothing listening, a wrong password, an
// unknown database, a port that accepts and never answers, another server's port — is refused with a
// ConfigError naming the setting, what was reached (host:port: never the URL, which may hold a password)
// and the fix, instead of the stores' generic "unavailable" after their own retry timeouts.
import net from 'node:net'
import tls from 'node:tls'
import { ConfigError } from './config-error.js'

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
export function describeDatabaseError(
  url: string,
  err: unknown,
  timeoutMs: number,
  caFileGiven = false,
): string {
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
  const certificate = certificateFailure('DATABASE_URL', 'DATABASE_CA_FILE', caFileGiven, where, err)
  if (certificate) return certificate
  const text = allMessages(err)
  if (/does not support SSL/i.test(text))
    return `DATABASE_URL: ${where} does not accept TLS connections — turn ssl on in its postgresql.conf, or change sslmode in the URL`
  if (/timeout/i.test(text))
    return `DATABASE_URL: no answer from ${where} within ${timeoutMs} ms — is that PostgreSQL's port?`
  if (server) return `DATABASE_URL: ${server.message} (SQLSTATE ${server.code})`
  // Closed, reset or answered something that is not the PostgreSQL protocol.
  return `DATABASE_URL: ${where} did not answer as PostgreSQL (${text}) — is that PostgreSQL's port?`
}

/** A Redis reply (RESP2): simple or bulk string, integer, nil, array, or an error. */
type Reply = string | number | null | Reply[] | { error: string }

class NotResp extends Error {}

/** One reply from the start of `buffer` (latin1: one character per byte): [reply, rest], or undefined while incomplete. */
function parseReply(buffer: string): [Reply, string] | undefined {
  if (buffer.length > 0 && !'+-:$*'.includes(buffer[0]!)) throw new NotResp()
  const end = buffer.indexOf('\r\n')
  if (end < 0) {
    if (buffer.length > 512) throw new NotResp()
    return undefined
  }
  const line = buffer.slice(1, end)
  let rest = buffer.slice(end + 2)
  switch (buffer[0]) {
    case '+':
      return [line, rest]
    case '-':
      return [{ error: line }, rest]
    case ':':
      return [Number(line), rest]
    case '$': {
      const n = Number(line)
      if (!Number.isInteger(n)) throw new NotResp()
      if (n < 0) return [null, rest]
      if (rest.length < n + 2) return undefined
      return [rest.slice(0, n), rest.slice(n + 2)]
    }
    default: {
      const n = Number(line)
      if (!Number.isInteger(n)) throw new NotResp()
      if (n < 0) return [null, rest]
      const items: Reply[] = []
      for (let i = 0; i < n; i++) {
        const next = parseReply(rest)
        if (next === undefined) return undefined
        items.push(next[0])
        rest = next[1]
      }
      return [items, rest]
    }
  }
}

function command(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

/** Certificate checks that failed on our side: the CA setting (or its absence) is what to fix. */
const VERIFY_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/**
 * The line for a server certificate that did not verify, naming `caSetting` (the CA file setting) when it
 * was given, else `setting` (then the system's CAs were used); undefined for any other error.
 */
export function certificateFailure(
  setting: string,
  caSetting: string,
  caGiven: boolean,
  where: string,
  err: unknown,
): string | undefined {
  const code = codes(err).find((c) => VERIFY_CODES.has(c))
  if (code === undefined) return undefined
  const reason = (err as Error).message
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `${caGiven ? caSetting : setting}: the certificate of ${where} did not verify (${reason}) — connect by a host name the certificate lists`
  return caGiven
    ? `${caSetting}: the certificate of ${where} did not verify against it (${reason}) — ${caSetting} must be the CA that signed the server's certificate`
    : `${setting}: the certificate of ${where} did not verify against the system's CAs (${reason}) — set ${caSetting} to the CA that signed it`
}

/** How one Redis step's reply reads: undefined = fine, 'again' = ask again (loading), else the start-up line. */
type Judge = (step: string, reply: Reply) => string | 'again' | undefined

interface Probe {
  /** The setting that named this address (REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES). */
  setting: string
  what: 'Redis' | 'Redis Sentinel'
  host: string
  port: number
  tls: RedisTlsFiles | undefined
  steps: Array<{ name: string; args: string[] }>
  judge: Judge
  timeoutMs: number
}

/** TLS of the Redis connections (rediss:// or REDIS_TLS=true): the files of REDIS_TLS_CA/CERT/KEY. */
export interface RedisTlsFiles {
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
}

/** Sends the steps one after the other on one connection; resolves the first failure's line, or the replies. */
function probe(p: Probe): Promise<{ failure: string } | { replies: Reply[] }> {
  const { setting, what, host, port, steps, timeoutMs } = p
  const where = hostPort(host, port)
  const notIt = `${setting}: ${where} did not answer as ${what} — is that ${what}'s port?`
  return new Promise((resolve) => {
    const socket = p.tls
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, ...p.tls })
      : net.connect({ host, port })
    let buffer = ''
    let step = 0
    const replies: Reply[] = []
    const done = (failure: string | undefined) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(failure === undefined ? { replies } : { failure })
    }
    const timer = setTimeout(
      () => done(`${setting}: no answer from ${where} within ${timeoutMs} ms — is that ${what}'s port?`),
      timeoutMs,
    )
    const send = () => socket.writable && socket.write(command(steps[step]!.args))
    socket.on(p.tls ? 'secureConnect' : 'connect', send)
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1')
      try {
        for (let next = parseReply(buffer); next !== undefined; next = parseReply(buffer)) {
          buffer = next[1]
          const verdict = p.judge(steps[step]!.name, next[0])
          // Redis is loading its data set: ioredis waits for it, so does the check (within the deadline).
          if (verdict === 'again') setTimeout(send, 100)
          else if (verdict !== undefined) return done(verdict)
          else {
            replies.push(next[0])
            if (++step === steps.length) return done(undefined)
            send()
          }
        }
      } catch {
        done(notIt)
      }
    })
    socket.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code
      const network = unreachable(setting, where, what, err)
      if (network) return done(network)
      if (p.tls) {
        // OpenSSL's messages span lines: the start-up line stays one.
        err.message = err.message.replace(/\s*\n\s*/g, ' ')
        const cert = certificateFailure(setting, 'REDIS_TLS_CA', p.tls.ca !== undefined, where, err)
        if (cert) return done(cert)
        if (/certificate required/i.test(err.message))
          return done(
            `REDIS_TLS_CERT: ${where} asks for a client certificate (TLS alert "certificate required") — set REDIS_TLS_CERT and REDIS_TLS_KEY`,
          )
        if (
          !codes(err).some((c) => c.startsWith('E') && !c.startsWith('ERR_SSL')) ||
          code?.startsWith('ERR_SSL')
        )
          return done(
            setting === 'REDIS_URL'
              ? `REDIS_URL: TLS with ${where} failed (${err.message}) — check rediss:// and the server's certificate`
              : `${setting}: TLS with ${where} failed (${err.message}) — check REDIS_TLS and the server's certificate`,
          )
      }
      done(
        `${setting}: ${where} did not answer as ${what} (${code ?? err.message}) — is that ${what}'s port?`,
      )
    })
    socket.on('close', () =>
      done(
        `${setting}: ${where} closed the connection without answering as ${what} — is that ${what}'s port?`,
      ),
    )
  })
}

/** Where the credentials of a connection came from, for the line that names what to fix. */
interface Credentials {
  username?: string
  password?: string
  /** 'url': REDIS_URL's user info; otherwise the settings' names (REDIS_PASSWORD, REDIS_SENTINEL_PASSWORD). */
  source: 'url' | { password: string; username: string }
}

function authStep(c: Credentials) {
  if (!c.password) return []
  return [{ name: 'AUTH', args: c.username ? ['AUTH', c.username, c.password] : ['AUTH', c.password] }]
}

/** The line for an error reply of AUTH, SELECT or a command refused for want of a password. */
function credentialFailure(c: Credentials, step: string, error: string, where: string): string | undefined {
  const code = error.split(' ', 1)[0]
  // A password given to a Redis without one: ioredis warns and goes on, so the demo does too.
  if (step === 'AUTH' && /no password is set|without any password configured/.test(error)) return ''
  if (code === 'WRONGPASS' || step === 'AUTH')
    return c.source === 'url'
      ? `REDIS_URL: authentication failed (${code}) — check the password in the URL`
      : `${c.source.password}: authentication failed (${code}) — check ${c.source.username} and ${c.source.password}`
  if (code === 'NOAUTH')
    return c.source === 'url'
      ? `REDIS_URL: Redis at ${where} requires a password (NOAUTH) — put it in the URL: redis://:<password>@${where}`
      : `${c.source.password}: ${where} requires a password (NOAUTH) — set ${c.source.password}`
  return undefined
}

/** AUTH, SELECT, PING on one data node: the judge of their replies. */
function dataNodeJudge(setting: string, where: string, c: Credentials, db: string): Judge {
  return (step, reply) => {
    if (step === 'PING' && typeof reply === 'object' && reply !== null && 'error' in reply)
      if (reply.error.startsWith('LOADING')) return 'again'
    if (typeof reply === 'object' && reply !== null && 'error' in reply) {
      const credential = credentialFailure(c, step, reply.error, where)
      if (credential === '') return undefined
      if (credential !== undefined) return credential
      if (step === 'SELECT')
        return `${setting}: Redis at ${where} has no database ${db} (${reply.error}) — fix the number after the port`
      return `${setting}: Redis at ${where} answered ${step} with an error (${reply.error})`
    }
    if (step === 'PING' && reply !== 'PONG')
      return `${setting}: ${where} did not answer as Redis — is that Redis's port?`
    if (typeof reply !== 'string')
      return `${setting}: ${where} did not answer as Redis — is that Redis's port?`
    return undefined
  }
}

export interface RedisCheckOptions {
  tls?: RedisTlsFiles
  /** REDIS_USERNAME / REDIS_PASSWORD when the URL holds none. */
  username?: string
  password?: string
}

/**
 * Connects to `REDIS_URL` once as ioredis would (AUTH with the URL's user and password, SELECT of its
 * database) and sends PING; throws a ConfigError naming the setting when that fails. URLs that are not
 * redis:// or rediss:// (a socket path) are left to ioredis.
 */
export async function checkRedis(
  url: string,
  timeoutMs = START_CHECK_TIMEOUT_MS,
  options: RedisCheckOptions = {},
): Promise<void> {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') return
  const host = u.hostname.replace(/^\[|\]$/g, '') || 'localhost'
  const port = Number(u.port || 6379)
  // Without REDIS_PASSWORD, the URL is where a password goes (and what the line names).
  const credentials: Credentials = !options.password
    ? { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password), source: 'url' }
    : {
        username: options.username,
        password: options.password,
        source: { password: 'REDIS_PASSWORD', username: 'REDIS_USERNAME' },
      }
  const db = u.pathname.slice(1)
  const steps = [
    ...authStep(credentials),
    ...(db && db !== '0' ? [{ name: 'SELECT', args: ['SELECT', db] }] : []),
    { name: 'PING', args: ['PING'] },
  ]
  const result = await probe({
    setting: 'REDIS_URL',
    what: 'Redis',
    host,
    port,
    tls: u.protocol === 'rediss:' ? (options.tls ?? {}) : undefined,
    steps,
    judge: dataNodeJudge('REDIS_URL', hostPort(host, port), credentials, db),
    timeoutMs,
  })
  if ('failure' in result) throw new ConfigError(result.failure)
}

export interface NodeAddress {
  host: string
  port: number
}

export interface SentinelCheck {
  sentinels: NodeAddress[]
  name: string
  sentinelUsername?: string
  sentinelPassword?: string
  username?: string
  password?: string
  tls?: RedisTlsFiles
}

const SENTINEL_CREDENTIALS = { password: 'REDIS_SENTINEL_PASSWORD', username: 'REDIS_SENTINEL_USERNAME' }
const DATA_CREDENTIALS = { password: 'REDIS_PASSWORD', username: 'REDIS_USERNAME' }

/**
 * Asks the sentinels, in order, for the primary of `name` and checks it answers (AUTH, PING): one
 * sentinel that knows it is enough (the others may be down). Throws a ConfigError naming the setting.
 */
export async function checkSentinels(s: SentinelCheck, timeoutMs = START_CHECK_TIMEOUT_MS): Promise<void> {
  const sentinelCredentials: Credentials = {
    username: s.sentinelUsername,
    password: s.sentinelPassword,
    source: SENTINEL_CREDENTIALS,
  }
  let first: string | undefined
  for (const sentinel of s.sentinels) {
    const where = hostPort(sentinel.host, sentinel.port)
    const result = await probe({
      setting: 'REDIS_SENTINELS',
      what: 'Redis Sentinel',
      ...sentinel,
      tls: s.tls,
      steps: [
        ...authStep(sentinelCredentials),
        { name: 'SENTINEL', args: ['SENTINEL', 'get-master-addr-by-name', s.name] },
      ],
      judge: (step, reply) => {
        if (typeof reply === 'object' && reply !== null && 'error' in reply) {
          const credential = credentialFailure(sentinelCredentials, step, reply.error, where)
          if (credential === '') return undefined
          if (credential !== undefined) return credential
          return `REDIS_SENTINELS: ${where} is not a Redis Sentinel (${reply.error}) — list the sentinels' ports (26379 by default)`
        }
        if (step !== 'SENTINEL') return undefined
        if (reply === null)
          return `REDIS_SENTINEL_NAME: the sentinel at ${where} knows no primary named ${s.name} — set REDIS_SENTINEL_NAME to the name in its sentinel monitor line`
        if (!Array.isArray(reply) || reply.length !== 2)
          return `REDIS_SENTINELS: ${where} did not answer as Redis Sentinel — is that Redis Sentinel's port?`
        return undefined
      },
      timeoutMs,
    })
    if ('failure' in result) {
      // A wrong password or name is the same on every sentinel: said at once; an unreachable one is skipped.
      if (!result.failure.startsWith('REDIS_SENTINELS:')) throw new ConfigError(result.failure)
      first ??= result.failure
      continue
    }
    const [host, port] = result.replies.at(-1) as [string, string]
    const primary = { host, port: Number(port) }
    const credentials: Credentials = { username: s.username, password: s.password, source: DATA_CREDENTIALS }
    const checked = await probe({
      setting: 'REDIS_SENTINELS',
      what: 'Redis',
      ...primary,
      tls: s.tls,
      steps: [...authStep(credentials), { name: 'PING', args: ['PING'] }],
      judge: dataNodeJudge('REDIS_SENTINELS', hostPort(host, primary.port), credentials, ''),
      timeoutMs,
    })
    if ('failure' in checked) {
      const line = checked.failure.replace(/^REDIS_SENTINELS: /, '')
      throw new ConfigError(
        checked.failure.startsWith('REDIS_SENTINELS:')
          ? `REDIS_SENTINELS: the primary ${s.name} at ${hostPort(host, primary.port)} that ${where} named: ${line}`
          : checked.failure,
      )
    }
    return
  }
  throw new ConfigError(first ?? 'REDIS_SENTINELS: no sentinel given')
}

export interface ClusterCheck {
  nodes: NodeAddress[]
  username?: string
  password?: string
  tls?: RedisTlsFiles
}

/**
 * Checks the first cluster node that answers (AUTH, PING, CLUSTER INFO): a node of a cluster whose state
 * is ok. Throws a ConfigError naming the setting.
 */
export async function checkCluster(c: ClusterCheck, timeoutMs = START_CHECK_TIMEOUT_MS): Promise<void> {
  const credentials: Credentials = { username: c.username, password: c.password, source: DATA_CREDENTIALS }
  let first: string | undefined
  for (const node of c.nodes) {
    const where = hostPort(node.host, node.port)
    const data = dataNodeJudge('REDIS_CLUSTER_NODES', where, credentials, '')
    const result = await probe({
      setting: 'REDIS_CLUSTER_NODES',
      what: 'Redis',
      ...node,
      tls: c.tls,
      steps: [
        ...authStep(credentials),
        { name: 'PING', args: ['PING'] },
        { name: 'CLUSTER', args: ['CLUSTER', 'INFO'] },
      ],
      judge: (step, reply) => {
        if (step !== 'CLUSTER') return data(step, reply)
        if (typeof reply === 'object' && reply !== null && 'error' in reply)
          return `REDIS_CLUSTER_NODES: ${where} is not a cluster node (${reply.error}) — for one Redis use REDIS_URL`
        if (typeof reply !== 'string' || !/^cluster_state:ok\r?$/m.test(reply))
          return `REDIS_CLUSTER_NODES: the cluster of ${where} is not ok (${/^cluster_state:(\w+)/m.exec(String(reply))?.[1] ?? 'no state'}) — are all its slots assigned?`
        return undefined
      },
      timeoutMs,
    })
    if (!('failure' in result)) return
    if (!/(connection refused|not found|unreachable|no answer)/.test(result.failure))
      throw new ConfigError(result.failure)
    first ??= result.failure
  }
  throw new ConfigError(first ?? 'REDIS_CLUSTER_NODES: no node given')
}
