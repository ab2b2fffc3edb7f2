// Configuration from the environment, with zero-setup defaults (PGlite + in-memory stores).
import { resolve } from 'node:path'

export interface DemoConfig {
  host: string
  /** HTTP and WebSocket (`/ws`). 0 = a random port. */
  port: number
  /** TCP frame protocol. 0 = a random port; -1 = no TCP server. */
  tcpPort: number
  tcpMode: 'direct' | 'inject'
  /** PGlite data folder and the generated development secrets. */
  dataDir: string
  /** PostgreSQL instead of PGlite. */
  databaseUrl: string | undefined
  /** PostgreSQL schema (created if missing; default: the server's search_path). */
  databaseSchema: string | undefined
  /** Redis for revocation, rate limits and cross-instance push. */
  redisUrl: string | undefined
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
}

function port(name: string, raw: string | undefined, fallback: number, allowOff = false): number {
  const value = raw === undefined || raw === '' ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < (allowOff ? -1 : 0) || value > 65535) {
    throw new Error(`${name} must be a port number${allowOff ? ' (or -1 to disable)' : ''}, got ${raw}`)
  }
  return value
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): DemoConfig {
  const tcpMode = env.TCP_MODE ?? 'direct'
  if (tcpMode !== 'direct' && tcpMode !== 'inject')
    throw new Error(`TCP_MODE must be direct or inject, got ${tcpMode}`)
  return {
    host: env.HOST ?? '127.0.0.1',
    port: port('PORT', env.PORT, 3000),
    tcpPort: port('TCP_PORT', env.TCP_PORT, 4000, true),
    tcpMode,
    dataDir: resolve(env.DATA_DIR ?? './data'),
    databaseUrl: env.DATABASE_URL || undefined,
    databaseSchema: env.DATABASE_SCHEMA || undefined,
    redisUrl: env.REDIS_URL || undefined,
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
  }
}
