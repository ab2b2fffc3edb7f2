// Which Redis the instances share (README "Operations"): one server (REDIS_URL), a Sentinel set
// (REDIS_SENTINELS) or a cluster (REDIS_CLUSTER_NODES), with credentials and TLS. The demo builds the
// ioredis client here and hands the instance to the packages (they take `Redis` or `Cluster`), so every
// store and the fan-out reach the same topology with the same settings.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Cluster, ClusterOptions, Redis, RedisOptions } from 'ioredis'
import {
  checkCluster,
  checkRedis,
  checkSentinels,
  type NodeAddress,
  type RedisTlsFiles,
} from './backend-checks.js'
import { ConfigError } from './config-error.js'

// ioredis is loaded when a Redis client is built, not when the demo's modules are imported: the embedded
// defaults (and each embedded demo test) never load its ~45 files (bench/README.md, "Cold import").
let ioredisLibrary: typeof import('ioredis') | undefined
function ioredis(): typeof import('ioredis') {
  ioredisLibrary ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis')
  return ioredisLibrary
}

/** The Redis settings besides REDIS_URL, as given in the environment (resolved by {@link resolveRedis}). */
export interface RedisSettings {
  sentinels?: string
  sentinelName?: string
  sentinelUsername?: string
  sentinelPassword?: string
  clusterNodes?: string
  username?: string
  password?: string
  tls?: string
  tlsCa?: string
  tlsCert?: string
  tlsKey?: string
}

export type RedisKind = 'single' | 'sentinel' | 'cluster'
export type RedisClient = Redis | Cluster

export interface RedisTopology {
  kind: RedisKind
  /** Whether the connections (to the sentinels too) are TLS. */
  tls: boolean
  /** A new client for the stores (the caller closes it). */
  create(): RedisClient
  /**
   * A client that never connects, holding only the connection settings: what the fan-out's publisher and
   * subscriber are duplicated from (@trivium/redis-bus adds its own retry and queue options).
   */
  template(): RedisClient
  /** The start-up check: throws a ConfigError naming the setting (backend-checks.ts). */
  check(): Promise<void>
}

/** What every client of the stores is given (unchanged from the single-REDIS_URL demo). */
const CLIENT_OPTIONS: Pick<
  RedisOptions,
  'enableOfflineQueue' | 'enableAutoPipelining' | 'autoPipeliningIgnoredCommands'
> = {
  enableOfflineQueue: false,
  // Revocation lookups of concurrent requests share round trips (while the mirror is not on).
  enableAutoPipelining: true,
  // The rate-limit store batches its hits itself (one script call per event-loop turn): through the
  // auto-pipeline its calls would wait for each other (one pipeline in flight at a time) and pay for
  // a Pipeline object each.
  autoPipeliningIgnoredCommands: ['evalsha', 'eval'],
}

const TOPOLOGIES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const

/** A PEM file of a TLS setting, read at start-up (a missing or wrong file is named then, not at connect). */
export function readPem(setting: string, path: string): Buffer {
  let content: Buffer
  try {
    content = readFileSync(path)
  } catch (err) {
    throw new ConfigError(
      `${setting}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}) — give the path of a PEM file`,
    )
  }
  if (!content.includes('-----BEGIN '))
    throw new ConfigError(`${setting}: ${path} is not a PEM file (no -----BEGIN line) — give a PEM file`)
  return content
}

/** `host:port,host:port` (IPv6 in brackets). */
export function parseNodes(setting: string, raw: string): NodeAddress[] {
  return raw.split(',').map((entry) => {
    const text = entry.trim()
    const match = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+)):(\d{1,5})$/i.exec(text)
    const port = Number(match?.[3])
    if (!match || port < 1 || port > 65535)
      throw new ConfigError(
        `${setting} entry "${text}" must be <host>:<port> (e.g. 10.0.0.5:26379), comma-separated`,
      )
    return { host: match[1] ?? match[2]!, port }
  })
}

function userInfo(url: string): { username: string; password: string } | undefined {
  try {
    const u = new URL(url)
    return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) }
  } catch {
    return undefined
  }
}

/**
 * The topology the settings describe, or undefined without Redis. Conflicting or incomplete settings are
 * refused with a ConfigError of one line naming them.
 */
export function resolveRedis(url: string | undefined, s: RedisSettings): RedisTopology | undefined {
  const given = TOPOLOGIES.filter(
    (name) => ({ REDIS_URL: url, REDIS_SENTINELS: s.sentinels, REDIS_CLUSTER_NODES: s.clusterNodes })[name],
  )
  if (given.length > 1)
    throw new ConfigError(
      `${given.join(' and ')} are ${given.length === 2 ? 'both' : 'all'} set — keep one: REDIS_URL (one Redis), REDIS_SENTINELS (a Sentinel set) or REDIS_CLUSTER_NODES (a cluster)`,
    )
  const named = (entries: Array<[string, string | undefined]>) => entries.filter(([, v]) => v).map(([n]) => n)
  const sentinelOnly = named([
    ['REDIS_SENTINEL_NAME', s.sentinelName],
    ['REDIS_SENTINEL_USERNAME', s.sentinelUsername],
    ['REDIS_SENTINEL_PASSWORD', s.sentinelPassword],
  ])
  if (s.sentinels === undefined && sentinelOnly.length > 0)
    throw new ConfigError(
      `${sentinelOnly[0]} is set without REDIS_SENTINELS — set REDIS_SENTINELS or remove it`,
    )
  const tlsFiles = named([
    ['REDIS_TLS_CA', s.tlsCa],
    ['REDIS_TLS_CERT', s.tlsCert],
    ['REDIS_TLS_KEY', s.tlsKey],
  ])
  if (given.length === 0) {
    const stray = named([
      ['REDIS_USERNAME', s.username],
      ['REDIS_PASSWORD', s.password],
      ['REDIS_TLS', s.tls],
    ]).concat(tlsFiles)
    if (stray.length > 0)
      throw new ConfigError(
        `${stray[0]} is set but no Redis is — set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES, or remove it`,
      )
    return undefined
  }
  let tlsOn: boolean
  if (url !== undefined) {
    if (s.tls !== undefined)
      throw new ConfigError(
        'REDIS_TLS applies to REDIS_SENTINELS and REDIS_CLUSTER_NODES — with REDIS_URL use rediss:// for TLS',
      )
    tlsOn = url.startsWith('rediss:')
    const info = userInfo(url)
    if (info?.password && s.password)
      throw new ConfigError('REDIS_URL and REDIS_PASSWORD both give a password — keep one')
    if (info?.username && s.username)
      throw new ConfigError('REDIS_URL and REDIS_USERNAME both give a user — keep one')
  } else {
    if (s.tls !== undefined && !['true', 'false', '1', '0'].includes(s.tls))
      throw new ConfigError(`REDIS_TLS must be true or false, got ${s.tls}`)
    tlsOn = s.tls === 'true' || s.tls === '1'
  }
  if (!tlsOn && tlsFiles.length > 0)
    throw new ConfigError(
      `${tlsFiles[0]} is set but the Redis connections are not TLS — ${url !== undefined ? 'use rediss:// in REDIS_URL' : 'set REDIS_TLS=true'}`,
    )
  if ((s.tlsCert === undefined) !== (s.tlsKey === undefined))
    throw new ConfigError(
      `${s.tlsCert === undefined ? 'REDIS_TLS_KEY' : 'REDIS_TLS_CERT'} is set without ${s.tlsCert === undefined ? 'REDIS_TLS_CERT' : 'REDIS_TLS_KEY'} — a client certificate needs both`,
    )
  const files: RedisTlsFiles | undefined = tlsOn
    ? {
        ...(s.tlsCa ? { ca: readPem('REDIS_TLS_CA', s.tlsCa) } : {}),
        ...(s.tlsCert ? { cert: readPem('REDIS_TLS_CERT', s.tlsCert) } : {}),
        ...(s.tlsKey ? { key: readPem('REDIS_TLS_KEY', s.tlsKey) } : {}),
      }
    : undefined
  const credentials = {
    ...(s.username ? { username: s.username } : {}),
    ...(s.password ? { password: s.password } : {}),
  }

  const connection = { ...credentials, ...(files ? { tls: { ...files } } : {}) }

  if (url !== undefined) {
    return {
      kind: 'single',
      tls: tlsOn,
      create: () => new (ioredis().Redis)(url, { ...CLIENT_OPTIONS, maxRetriesPerRequest: 1, ...connection }),
      template: () => new (ioredis().Redis)(url, { lazyConnect: true, ...connection }),
      check: () => checkRedis(url, undefined, { tls: files, ...credentials }),
    }
  }
  if (s.sentinels !== undefined) {
    const sentinels = parseNodes('REDIS_SENTINELS', s.sentinels)
    const name = s.sentinelName ?? 'mymaster'
    const sentinelCredentials = {
      ...(s.sentinelUsername ? { sentinelUsername: s.sentinelUsername } : {}),
      ...(s.sentinelPassword ? { sentinelPassword: s.sentinelPassword } : {}),
    }
    const sentinelConnection: RedisOptions = {
      sentinels,
      name,
      ...sentinelCredentials,
      ...connection,
      // TLS to the sentinels and to the data nodes they name, with the same files.
      ...(files ? { sentinelTLS: { ...files }, enableTLSForSentinelMode: true } : {}),
      // A primary demoted while alive (a manual failover) answers writes READONLY: reconnect, which asks
      // the sentinels for the new one. (ioredis's `failoverDetector` is not used: its +switch-master
      // arriving while a reconnect asks a sentinel ends the client for good — status "end".)
      reconnectOnError: (err) => err.message.startsWith('READONLY'),
    }
    return {
      kind: 'sentinel',
      tls: tlsOn,
      create: () =>
        new (ioredis().Redis)({
          ...CLIENT_OPTIONS,
          maxRetriesPerRequest: 1,
          ...sentinelConnection,
          // Reconnects (each asks the sentinels for the primary) at most 500 ms apart, not ioredis's 2 s:
          // a failover's outage ends within half a second of the promotion.
          retryStrategy: (times) => Math.min(times * 50, 500),
        }),
      template: () => new (ioredis().Redis)({ lazyConnect: true, ...sentinelConnection }),
      check: () => checkSentinels({ sentinels, name, ...sentinelCredentials, ...credentials, tls: files }),
    }
  }
  const nodes = parseNodes('REDIS_CLUSTER_NODES', s.clusterNodes!)
  const options: ClusterOptions = {
    ...CLIENT_OPTIONS,
    redisOptions: { maxRetriesPerRequest: 1, ...connection },
  }
  return {
    kind: 'cluster',
    tls: tlsOn,
    create: () => new (ioredis().Cluster)(nodes, options),
    template: () => new (ioredis().Cluster)(nodes, { lazyConnect: true, redisOptions: connection }),
    check: () => checkCluster({ nodes, ...credentials, tls: files }),
  }
}

/** Readiness of the client (readiness.ts): a PING, and on a cluster its own state (all slots served). */
export async function redisHealthy(client: RedisClient): Promise<void> {
  if (client instanceof ioredis().Cluster) {
    const info = String(await client.cluster('INFO'))
    if (!/^cluster_state:ok\r?$/m.test(info)) throw new Error('cluster state is not ok')
    return
  }
  await client.ping()
}
