// Configuration from the environment, with zero-setup defaults (PGlite + in-memory stores).
import { resolve } from 'node:path'
import { CORS_DEFAULTS } from '@trivium/protections'

export interface DemoConfig {
  host: string
  /** HTTP and WebSocket (`/ws`). 0 = a random port. */
  port: number
  /** TCP frame protocol. 0 = a random port; -1 = no TCP server. */
  tcpPort: number
  tcpMode: 'direct' | 'inject'
  /** HTTP2 with TLS_CERT/TLS_KEY: h2 over TLS (HTTP/1.1 on the same port), or `h2c`; none by default. */
  http2: Http2Setting
  /** PGlite data folder and the generated development secrets. */
  dataDir: string
  /** PostgreSQL instead of PGlite. */
  databaseUrl: string | undefined
  /** PostgreSQL schema (created if missing; default: the server's search_path). */
  databaseSchema: string | undefined
  /** DATABASE_CA_FILE: the CA that signed PostgreSQL's certificate (with sslmode in DATABASE_URL). */
  databaseCaFile: string | undefined
  /** Redis for revocation, rate limits and cross-instance push: one server. */
  redisUrl: string | undefined
  /** The other Redis settings: a Sentinel set, a cluster, credentials, TLS (redis-topology.ts). */
  redisSettings: RedisSettings
  /** Prefix of every Redis key and channel this deployment uses (several deployments can share one Redis). */
  redisPrefix: string
  production: boolean
  logLevel: string
  trustProxy: boolean
  adminUsername: string
  adminPassword: string | undefined
  adminEmail: string
  /** Secrets from the environment; filled from the data folder in development (see secrets.ts). */
  signingSecret: string | undefined
  encryptionKey: string | undefined
  hashSalt: string | undefined
  /** Name of this instance in logs and /health (several instances share one database). */
  instanceName: string
  /** CORS_ORIGINS: allowed origins (`*`, `*.example.com`, or `https://host[:port]`). */
  corsOrigins: string[]
  /** CORS_CREDENTIALS: send Access-Control-Allow-Credentials (refused with `*`). */
  corsCredentials: boolean
  /** CORS_HEADERS: request headers a page on another origin may send (default the spec's). */
  corsHeaders: string[]
  /** CORS_EXPOSED_HEADERS: response headers such a page's script may read (default none). */
  corsExposedHeaders: string[]
  /** RATE_LIMIT_DEFAULT: limit of endpoints without one of their own; false = rate limiting off. */
  rateLimitDefault: RateLimitSetting | false
  /** RATE_LIMITS: endpoint name → limit, or false for none (wins over the schema's limits). */
  rateLimits: Record<string, RateLimitSetting | false>
  /** BODY_LIMIT: largest request body (HTTP body, WebSocket message, TCP frame payload) in bytes. */
  bodyLimit: number
  /** ACCESS_TOKEN_TTL: access-token lifetime in seconds. */
  accessTokenTtlSeconds: number
  /** METRICS: serve GET /metrics to operators (default true in the demo; operator.ts says who). */
  metrics: boolean
  /** METRICS_TOKEN: the scraper's bearer token for GET /metrics and readiness's checks (none by default). */
  metricsToken: string | undefined
  /** METRICS_LISTEN: serve GET /metrics on this separate address instead of the API's port (none by default). */
  metricsListen: { host: string; port: number } | undefined
  /** ACCESS_LOG: one log line per call on every transport (default true). */
  accessLog: boolean
  /**
   * COMPRESSION: compress HTTP responses and TCP frames for clients that accept it — `true` at the packages'
   * threshold (1 KiB), `{ threshold }` in bytes, or false (behind a proxy that compresses).
   */
  compression: boolean | { threshold: number }
}

export interface RateLimitSetting {
  requests: number
  windowMs: number
}

import { ConfigError } from './config-error.js'
import { type Http2Setting, parseHttp2 } from './http2-setting.js'
import { type RedisSettings, readPem, resolveRedis } from './redis-topology.js'

export { ConfigError }

function port(name: string, raw: string | undefined, fallback: number, allowOff = false): number {
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < (allowOff ? -1 : 0) || value > 65535) {
    throw new ConfigError(`${name} must be a port number${allowOff ? ' (or -1 to disable)' : ''}, got ${raw}`)
  }
  return value
}

function bool(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new ConfigError(`${name} must be true or false, got ${raw}`)
}

function positiveInt(name: string, raw: string | undefined, fallback: number, unit: string): number {
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value <= 0)
    throw new ConfigError(`${name} must be a positive whole number of ${unit}, got ${raw}`)
  return value
}

/** COMPRESSION: `on` (the default: the packages' threshold, 1 KiB), `off`, or a threshold in bytes. */
export function parseCompression(raw: string | undefined): boolean | { threshold: number } {
  if (raw === undefined || raw === '' || raw === 'on' || raw === 'true') return true
  if (raw === 'off' || raw === 'false') return false
  const threshold = Number(raw)
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(threshold) || threshold < 1)
    throw new ConfigError(`COMPRESSION must be on, off or a threshold in bytes (e.g. 1024), got ${raw}`)
  return { threshold }
}

/** METRICS_LISTEN: `<port>` (on 127.0.0.1), `<host>:<port>` or `[<IPv6>]:<port>`. */
export function parseListen(raw: string | undefined): { host: string; port: number } | undefined {
  if (raw === undefined || raw === '') return undefined
  const match = /^(?:\[([0-9a-f:.]+)\]:|([a-z0-9.-]+):)?(\d{1,5})$/i.exec(raw)
  const value = Number(match?.[3])
  if (!match || value > 65535)
    throw new ConfigError(
      `METRICS_LISTEN must be <port> or <host>:<port> (e.g. 127.0.0.1:9464, [::1]:9464), got ${raw}`,
    )
  return { host: match[1] ?? match[2] ?? '127.0.0.1', port: value }
}

const ORIGIN = /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/i
const WILDCARD = /^\*\.[a-z0-9-]+(\.[a-z0-9-]+)*$/i

/** CORS_ORIGINS: comma-separated; `*`, `*.example.com` (any subdomain) or an exact origin. */
export function parseOrigins(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return ['*']
  const origins = raw.split(',').map((o) => o.trim())
  for (const origin of origins) {
    if (origin !== '*' && !WILDCARD.test(origin) && !ORIGIN.test(origin)) {
      throw new ConfigError(
        `CORS_ORIGINS entry "${origin}" is not an origin: use *, *.example.com or https://host[:port] (no path), comma-separated`,
      )
    }
  }
  return origins
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i

/** CORS_HEADERS / CORS_EXPOSED_HEADERS: comma-separated header names; unset or empty = `fallback`. */
export function parseHeaderNames(
  name: string,
  raw: string | undefined,
  fallback: readonly string[],
): string[] {
  if (raw === undefined || raw.trim() === '') return [...fallback]
  const names = raw.split(',').map((h) => h.trim())
  for (const header of names) {
    if (!HEADER_NAME.test(header))
      throw new ConfigError(
        `${name} entry "${header}" is not a header name: use names such as Trivium-Timeout-Ms, Idempotency-Key, comma-separated`,
      )
  }
  return names
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
const LIMIT_FORMAT = 'use <requests>/<window> such as 100/60s, 5/1m or 1000/500ms, or 0 (or off) for no limit'

/** One limit: `100/60s` (requests per window; units ms, s, m, h), or `0` / `off` = no limit. */
export function parseLimit(name: string, raw: string): RateLimitSetting | false {
  const text = raw.trim()
  if (text === '0' || text === 'off') return false
  const match = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(text)
  const requests = Number(match?.[1])
  const windowMs = Number(match?.[2]) * (UNITS[match?.[3] ?? 's'] ?? Number.NaN)
  if (
    !match ||
    requests < 1 ||
    windowMs < 1 ||
    !Number.isSafeInteger(requests) ||
    !Number.isSafeInteger(windowMs)
  )
    throw new ConfigError(`${name} "${raw}" is not a rate limit: ${LIMIT_FORMAT}`)
  return { requests, windowMs }
}

/**
 * Endpoints never rate limited: liveness (`health`) is probed from one address (a load balancer, an
 * orchestrator) far more often than a client calls, and a refused probe drains or restarts a healthy
 * instance. The schema declares them `"rateLimit": false` (so /openapi.json lists no 429); RATE_LIMITS,
 * which wins over the schema, may not name them. (`/health/ready` is a plain route, outside the limiter.)
 */
export const NEVER_LIMITED = ['health'] as const

/** RATE_LIMITS: `auth.login=5/60s,tasks.create=off` (comma-separated endpoint=limit). */
export function parseLimits(raw: string | undefined): Record<string, RateLimitSetting | false> {
  const limits: Record<string, RateLimitSetting | false> = {}
  if (raw === undefined || raw.trim() === '') return limits
  for (const entry of raw.split(',')) {
    const eq = entry.indexOf('=')
    const endpoint = entry.slice(0, eq).trim()
    if (eq < 0 || !/^[A-Za-z][\w.-]*$/.test(endpoint))
      throw new ConfigError(
        `RATE_LIMITS entry "${entry.trim()}" must be <endpoint>=<limit>, e.g. auth.login=5/60s`,
      )
    if (endpoint in limits) throw new ConfigError(`RATE_LIMITS names ${endpoint} twice`)
    if ((NEVER_LIMITED as readonly string[]).includes(endpoint))
      throw new ConfigError(
        `RATE_LIMITS names ${endpoint}, which is never rate limited (liveness probes); remove it`,
      )
    limits[endpoint] = parseLimit(`RATE_LIMITS ${endpoint}`, entry.slice(eq + 1))
  }
  return limits
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): DemoConfig {
  const tcpMode = env.TCP_MODE ?? 'direct'
  if (tcpMode !== 'direct' && tcpMode !== 'inject')
    throw new ConfigError(`TCP_MODE must be direct or inject, got ${tcpMode}`)
  const corsOrigins = parseOrigins(env.CORS_ORIGINS)
  const corsCredentials = bool('CORS_CREDENTIALS', env.CORS_CREDENTIALS, false)
  if (corsCredentials && corsOrigins.includes('*'))
    throw new ConfigError('CORS_CREDENTIALS=true needs CORS_ORIGINS to list the allowed origins (not *)')
  const corsHeaders = parseHeaderNames('CORS_HEADERS', env.CORS_HEADERS, CORS_DEFAULTS.allowedHeaders)
  const corsExposedHeaders = parseHeaderNames('CORS_EXPOSED_HEADERS', env.CORS_EXPOSED_HEADERS, [])
  const rateLimitDefault = parseLimit('RATE_LIMIT_DEFAULT', env.RATE_LIMIT_DEFAULT || '100/60s')
  const rateLimits = parseLimits(env.RATE_LIMITS)
  if (rateLimitDefault === false && Object.keys(rateLimits).length > 0)
    throw new ConfigError(
      'RATE_LIMIT_DEFAULT=off turns rate limiting off for every endpoint; unset RATE_LIMITS',
    )
  const httpPort = port('PORT', env.PORT, 3000)
  const tcpPort = port('TCP_PORT', env.TCP_PORT, 4000, true)
  if (httpPort === tcpPort && httpPort !== 0)
    throw new ConfigError(`PORT and TCP_PORT must differ (both are ${httpPort})`)
  const metricsToken = env.METRICS_TOKEN || undefined
  if (metricsToken !== undefined && metricsToken.length < 16)
    throw new ConfigError('METRICS_TOKEN must be at least 16 characters (e.g. openssl rand -hex 16)')
  const databaseUrl = env.DATABASE_URL || undefined
  const databaseCaFile = env.DATABASE_CA_FILE || undefined
  if (databaseCaFile !== undefined) checkDatabaseCa(databaseUrl, databaseCaFile)
  const redisUrl = env.REDIS_URL || undefined
  const redisSettings: RedisSettings = {
    sentinels: env.REDIS_SENTINELS || undefined,
    sentinelName: env.REDIS_SENTINEL_NAME || undefined,
    sentinelUsername: env.REDIS_SENTINEL_USERNAME || undefined,
    sentinelPassword: env.REDIS_SENTINEL_PASSWORD || undefined,
    clusterNodes: env.REDIS_CLUSTER_NODES || undefined,
    username: env.REDIS_USERNAME || undefined,
    password: env.REDIS_PASSWORD || undefined,
    tls: env.REDIS_TLS || undefined,
    tlsCa: env.REDIS_TLS_CA || undefined,
    tlsCert: env.REDIS_TLS_CERT || undefined,
    tlsKey: env.REDIS_TLS_KEY || undefined,
  }
  resolveRedis(redisUrl, redisSettings) // refuses conflicting settings and unreadable files now
  return {
    host: env.HOST ?? '127.0.0.1',
    port: httpPort,
    tcpPort,
    tcpMode,
    http2: parseHttp2(env),
    dataDir: resolve(env.DATA_DIR ?? './data'),
    databaseUrl,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    databaseCaFile,
    redisUrl,
    redisSettings,
    redisPrefix: env.REDIS_PREFIX ?? 'trivium:',
    production: env.NODE_ENV === 'production',
    logLevel: env.LOG_LEVEL ?? 'info',
    trustProxy: env.TRUST_PROXY === 'true',
    adminUsername: env.ADMIN_USERNAME ?? 'admin',
    adminPassword: env.ADMIN_PASSWORD || undefined,
    adminEmail: env.ADMIN_EMAIL ?? 'admin@example.com',
    signingSecret: env.SIGNING_SECRET || undefined,
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    hashSalt: env.HASH_SALT || undefined,
    instanceName: env.INSTANCE_NAME ?? `demo-${process.pid}`,
    corsOrigins,
    corsCredentials,
    corsHeaders,
    corsExposedHeaders,
    rateLimitDefault,
    rateLimits,
    bodyLimit: positiveInt('BODY_LIMIT', env.BODY_LIMIT, 1_048_576, 'bytes'),
    accessTokenTtlSeconds: positiveInt('ACCESS_TOKEN_TTL', env.ACCESS_TOKEN_TTL, 3600, 'seconds'),
    metrics: bool('METRICS', env.METRICS, true),
    metricsToken,
    metricsListen: parseListen(env.METRICS_LISTEN),
    accessLog: bool('ACCESS_LOG', env.ACCESS_LOG, true),
    compression: parseCompression(env.COMPRESSION),
  }
}

/** sslmode values of DATABASE_URL under which the server's certificate is checked against DATABASE_CA_FILE. */
const VERIFYING_SSLMODES = ['verify-full', 'verify-ca', 'require']

/** DATABASE_CA_FILE needs a DATABASE_URL whose sslmode checks certificates, and no sslrootcert of its own. */
function checkDatabaseCa(url: string | undefined, file: string): void {
  if (url === undefined)
    throw new ConfigError('DATABASE_CA_FILE is set without DATABASE_URL — set DATABASE_URL or remove it')
  let params: URLSearchParams
  try {
    params = new URL(url).searchParams
  } catch {
    throw new ConfigError(
      'DATABASE_CA_FILE needs DATABASE_URL as a postgres:// URL (with ?sslmode=verify-full)',
    )
  }
  if (params.has('sslrootcert'))
    throw new ConfigError('DATABASE_URL (sslrootcert) and DATABASE_CA_FILE both give a CA — keep one')
  const mode = params.get('sslmode')
  if (mode === null || !VERIFYING_SSLMODES.includes(mode))
    throw new ConfigError(
      `DATABASE_CA_FILE needs sslmode=verify-full in DATABASE_URL (${mode === null ? 'no sslmode' : `sslmode=${mode}`} given)`,
    )
  readPem('DATABASE_CA_FILE', file)
}
