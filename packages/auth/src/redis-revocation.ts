// The Redis variant of the revocation list: key `<prefix><jti>`, expiry by Redis TTL. Typed against the
// few ioredis methods it calls, so the package's types do not need the optional peer `ioredis`.
//
// With `mirror` (a channel of @trivium/redis-bus) the store keeps a copy of the list in memory and
// answers `contains` from it, without a round trip: every add/remove is announced on the channel by Redis
// itself, in the same Lua script as the SET/DEL (so no change is ever stored without its announcement),
// and every instance applies the announcements. The copy is used only while it is known to be complete
// (README "Revocation list", PROTOCOL.md "Revocation window"); otherwise `contains` asks Redis as without
// a mirror.
//
// With `durable` (a SqlRevocationStore) the durable store is the source of truth: every change is stored
// there first, the mirror is loaded from it, lookups the mirror cannot answer ask it, and the Redis keys
// are a copy that is rebuilt from it whenever Redis is found to have lost it (the marker key `<prefix>`
// holds the run id of the Redis server the copy was written to: a restart without persistence, FLUSHALL,
// eviction of the marker or a failover to a replica changes or removes it).
import { createHash } from 'node:crypto'
import { ServiceUnavailableException } from '@trivium/core'
import { ExpiringSet } from './expiring-set.js'
import {
  checkJti,
  checkTtl,
  type DurableRevocationStore,
  type RevocationStore,
  STORE_UNAVAILABLE,
} from './revocation.js'

/** The part of an ioredis client the store uses (an ioredis `Redis` or `Cluster` fits). */
export interface RevocationRedisClient {
  readonly status: string
  set(key: string, value: string): Promise<unknown>
  set(key: string, value: string, mode: 'EX' | 'PX', amount: number): Promise<unknown>
  exists(key: string): Promise<number>
  del(key: string): Promise<number>
  disconnect(): void
  /** The mirror only: the add/remove scripts. */
  evalsha?(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  eval?(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
  /** The mirror only: loading the list (`SCAN cursor MATCH pattern COUNT n`, then `PTTL` per key). */
  scan?(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>
  pttl?(key: string): Promise<number>
  /** The mirror only: the heartbeat (`spublish` on a Cluster). */
  publish?(channel: string, message: string): Promise<number>
  spublish?(channel: string, message: string): Promise<unknown>
  /**
   * ioredis `Cluster` only: its primaries (the mirror's load scans each), the slot table and `CLUSTER
   * KEYSLOT` (the marker's node is asked for its run id).
   */
  nodes?(role: 'master'): RevocationRedisNode[]
  readonly slots?: string[][]
  cluster?(subcommand: 'KEYSLOT', key: string): Promise<unknown>
  /** With `durable` only: checking the Redis copy (`GET` marker, `INFO server`, `PEXPIRE` marker). */
  get?(key: string): Promise<string | null>
  info?(section: string): Promise<string>
  pexpire?(key: string, ms: number): Promise<number>
}

/** A primary of an ioredis `Cluster` (`nodes('master')`): the mirror's load scans it; its run id marks the copy. */
export interface RevocationRedisNode {
  readonly options: { host?: string; port?: number }
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>
  info(section: string): Promise<string>
}

/** What the mirror announces: a change of the list, or a heartbeat of one store. */
/**
 * `list` is the store's key prefix: stores with other prefixes on the same channel ignore it. `by` and
 * `seq` name the writing store and its change number: the writer, which applied the change at once, skips
 * its own announcement when it has applied a newer change of that jti since (remove then add at once).
 */
export type RevocationChange =
  | { op: 'add'; list: string; jti: string; ttl?: number; by?: string; seq?: number }
  | { op: 'remove'; list: string; jti: string; by?: string; seq?: number }
  | { op: 'ping'; id: string; n: number }

/**
 * The channel the mirror's changes travel on: a `RedisChannel` of `@trivium/redis-bus` fits
 * (`new RedisChannel('revocation-list', { pubsub })`). It must be on the same Redis as `client`.
 */
export interface RevocationMirrorChannel {
  /** The Redis channel name (the scripts PUBLISH on it). */
  readonly channel: string
  /** True when the channel is a shard channel of a Redis Cluster (the scripts SPUBLISH on it). */
  readonly sharded?: boolean
  /** True while the channel is subscribed on a live connection. */
  readonly subscribed: boolean
  /** The payload to PUBLISH for `message` (the channel's envelope). */
  encode(message: RevocationChange): string
  subscribe(handler: (message: unknown) => void): () => void
  onSubscriptionLost(listener: () => void): () => void
  onResubscribed(listener: () => void): () => void
}

export interface RevocationMirrorOptions {
  channel: RevocationMirrorChannel
  /**
   * Every this many ms the store publishes a heartbeat on the channel and expects it back (default 250).
   */
  heartbeatMs?: number
  /**
   * The mirror is trusted only while its last heartbeat came back within this many ms (default 1000):
   * a subscription that died silently (no TCP reset) stops being trusted after at most this long.
   */
  maxSilenceMs?: number
  /**
   * With `durable`: every this many ms the copy is compared with the rows the durable store received
   * lately (default 5000), which catches a change stored there whose announcement never went out (its
   * writer lost Redis, then died).
   */
  pollMs?: number
}

export interface RedisRevocationStoreOptions {
  /** An ioredis client. Prefer `enableOfflineQueue: false` so an outage fails fast. */
  client: RevocationRedisClient
  /** Key prefix (default `blacklist:token:`). */
  prefix?: string
  /** A command that has not answered after this many ms fails closed (default 1000). */
  commandTimeoutMs?: number
  /** Close the client in `close()` (default false: the caller owns it). */
  closeClient?: boolean
  /** Answer `contains` from an in-memory copy kept current over this channel (see README). */
  mirror?: RevocationMirrorOptions
  /**
   * The source of truth (a `SqlRevocationStore`; needs `mirror`): changes are stored there first, the
   * mirror is loaded from it, lookups the mirror cannot answer ask it, and the Redis keys are rebuilt
   * from it when Redis lost them (README "Durable source").
   */
  durable?: DurableRevocationStore
}

export const DEFAULT_REDIS_PREFIX = 'blacklist:token:'

// KEYS[1] entry key; ARGV[1] ttl in seconds ('' = none); ARGV[2] channel; ARGV[3] announcement.
export const ADD_AND_ANNOUNCE_LUA = `
if ARGV[1] == '' then
  redis.call('SET', KEYS[1], '1')
else
  redis.call('SET', KEYS[1], '1', 'EX', ARGV[1])
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
`
// KEYS[1] entry key; ARGV[1] channel; ARGV[2] announcement.
export const REMOVE_AND_ANNOUNCE_LUA = `
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`
// On a Cluster: the same with sharded pub/sub (the key and the channel share a slot, see `keyPrefix`).
const SHARDED_ADD_LUA = ADD_AND_ANNOUNCE_LUA.replace("'PUBLISH'", "'SPUBLISH'")
const SHARDED_REMOVE_LUA = REMOVE_AND_ANNOUNCE_LUA.replace("'PUBLISH'", "'SPUBLISH'")
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')
const SCRIPTS = {
  plain: {
    add: { sha: sha1(ADD_AND_ANNOUNCE_LUA), source: ADD_AND_ANNOUNCE_LUA },
    remove: { sha: sha1(REMOVE_AND_ANNOUNCE_LUA), source: REMOVE_AND_ANNOUNCE_LUA },
  },
  sharded: {
    add: { sha: sha1(SHARDED_ADD_LUA), source: SHARDED_ADD_LUA },
    remove: { sha: sha1(SHARDED_REMOVE_LUA), source: SHARDED_REMOVE_LUA },
  },
}

/** The hash tag that puts a key in `channel`'s slot: its own tag if it has one, else the whole name. */
function hashTagOf(channel: string): string {
  const open = channel.indexOf('{')
  const close = open === -1 ? -1 : channel.indexOf('}', open + 1)
  return close > open + 1 ? channel.slice(open, close + 1) : `{${channel}}`
}

function isCluster(client: RevocationRedisClient): boolean {
  return typeof client.nodes === 'function'
}
const DOWN = new Set(['end', 'close', 'reconnecting'])
/** The marker's TTL: refreshed on every check of the copy (so it also goes when every instance is gone). */
const MARKER_TTL_MS = 60_000
/** How often the Redis copy is checked against its marker (with `durable`). */
const COPY_CHECK_MS = 1000
/** How far back (ms) the poll of the durable store looks beyond its interval: clock skew between writers. */
const POLL_OVERLAP_MS = 60_000

type AnnouncedChange = Extract<RevocationChange, { op: 'add' | 'remove' }>

/** Mirror states: 'off' asks Redis, 'syncing' loads the list (and still asks Redis), 'on' answers locally. */
export type MirrorState = 'off' | 'syncing' | 'on'

/** Key-value variant: key `<prefix><jti>`, expiry by Redis TTL. */
export class RedisRevocationStore implements RevocationStore {
  readonly prefix: string
  /**
   * What the keys start with: `prefix`, except on a Redis Cluster with the mirror, where the whole list
   * lives in the slot of the mirror's channel: `{<channel>}<prefix>` (one slot for the add/remove scripts
   * with their SPUBLISH, the marker, and the load).
   */
  readonly keyPrefix: string
  private readonly client: RevocationRedisClient
  private readonly timeoutMs: number
  private readonly closeClient: boolean
  private readonly mirror: Mirror | undefined
  /** @internal */
  readonly durable: DurableRevocationStore | undefined
  readonly #foundListeners = new Set<(jti: string) => void>()

  constructor(options: RedisRevocationStoreOptions) {
    if (!options || typeof options.client !== 'object' || options.client === null) {
      throw new TypeError('@trivium/auth: RedisRevocationStore needs an ioredis client')
    }
    this.client = options.client
    this.prefix = options.prefix ?? DEFAULT_REDIS_PREFIX
    if (typeof this.prefix !== 'string') throw new TypeError('@trivium/auth: prefix must be a string')
    this.timeoutMs = options.commandTimeoutMs ?? 1000
    this.closeClient = options.closeClient ?? false
    const durable = options.durable
    if (durable !== undefined) {
      if (
        durable === null ||
        typeof durable !== 'object' ||
        typeof durable.entries !== 'function' ||
        typeof durable.add !== 'function'
      ) {
        throw new TypeError('@trivium/auth: durable must be a SqlRevocationStore (a store with entries())')
      }
      if (options.mirror === undefined) throw new TypeError('@trivium/auth: durable needs the mirror option')
      for (const method of ['get', 'info', 'pexpire'] as const) {
        if (typeof this.client[method] !== 'function') {
          throw new TypeError(`@trivium/auth: durable needs an ioredis client (missing ${method})`)
        }
      }
    }
    this.durable = durable
    const channel = options.mirror?.channel
    this.keyPrefix =
      isCluster(this.client) && typeof channel?.channel === 'string'
        ? hashTagOf(channel.channel) + this.prefix
        : this.prefix
    if (options.mirror !== undefined) this.mirror = new Mirror(this, this.client, options.mirror)
  }

  /**
   * Calls `listener` each time the mirror has been (re)loaded and answers again, with a lookup into the
   * fresh copy: revocations announced while the subscription was down were missed, so the sessions and
   * streams of this instance should be checked against it (the demo closes the listed ones). Returns an
   * unsubscribe function. Never called without `mirror`.
   */
  onMirrorReload(listener: (isListed: (jti: string) => boolean) => void): () => void {
    return this.mirror?.onReload(listener) ?? (() => {})
  }

  /**
   * Calls `listener` with a jti each time a lookup that the mirror could not answer (not loaded, or
   * distrusted: the subscription lost, heartbeats not coming back) found it listed in the durable store or
   * Redis. The revocation's announcement may never have reached this instance: close the sessions and
   * streams of that token here, as on the announcement (the demo does). Returns an unsubscribe function.
   */
  onListedFound(listener: (jti: string) => void): () => void {
    this.#foundListeners.add(listener)
    return () => this.#foundListeners.delete(listener)
  }

  /** Where the mirror is (undefined without `mirror`): only 'on' answers `contains` from memory. */
  get mirrorState(): MirrorState | undefined {
    return this.mirror?.state
  }

  /**
   * Resolves once the mirror answers from memory (at once without `mirror`); rejects after `timeoutMs`
   * (default 10 000). Until then `contains` asks Redis, so waiting is optional.
   */
  mirrorReady(timeoutMs = 10_000): Promise<void> {
    return this.mirror ? this.mirror.whenOn(timeoutMs) : Promise.resolve()
  }

  /** @internal Runs a command with the store's fail-closed policy (503 when Redis cannot answer). */
  async run<T>(command: () => Promise<T>): Promise<T> {
    const status = this.client.status
    // Not connected and not about to be: answer 503 now rather than queueing the command.
    if (DOWN.has(status)) {
      throw new ServiceUnavailableException(STORE_UNAVAILABLE)
    }
    let timer: NodeJS.Timeout | undefined
    try {
      return await Promise.race([
        command(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new ServiceUnavailableException(STORE_UNAVAILABLE)), this.timeoutMs)
        }),
      ])
    } catch {
      throw new ServiceUnavailableException(STORE_UNAVAILABLE)
    } finally {
      clearTimeout(timer)
    }
  }

  async add(jti: string, ttlSeconds?: number): Promise<void> {
    const key = this.keyPrefix + checkJti(jti)
    const ttl = checkTtl(ttlSeconds)
    // The source of truth first: no copy ever holds an entry the durable store could lose.
    await this.durable?.add(jti, ttl)
    const mirror = this.mirror
    if (mirror === undefined) {
      await this.run(() =>
        ttl === undefined ? this.client.set(key, '1') : this.client.set(key, '1', 'EX', ttl),
      )
      return
    }
    const list = this.prefix
    const change = mirror.stamp(ttl === undefined ? { op: 'add', list, jti } : { op: 'add', list, jti, ttl })
    // Stored durably: this instance refuses the token at once, even if Redis fails now.
    if (this.durable) mirror.apply(change, true)
    await mirror.announce(change)
    // This instance refuses the token at once, without waiting for its own announcement.
    mirror.apply(change, true)
  }

  async contains(jti: string): Promise<boolean> {
    const mirror = this.mirror
    // Redis down for this client: fail closed exactly as without the mirror.
    if (mirror !== undefined && DOWN.has(this.client.status)) {
      throw new ServiceUnavailableException(STORE_UNAVAILABLE)
    }
    if (mirror?.trusted()) return mirror.has(jti)
    // The copy is not known to be complete: ask the source of truth, else Redis.
    const key = this.keyPrefix + jti
    const listed =
      this.durable !== undefined
        ? await this.durable.contains(jti)
        : (await this.run(() => this.client.exists(key))) === 1
    if (listed) this.#found(jti)
    return listed
  }

  /** A lookup outside the mirror found `jti` listed: the listeners close its sessions. */
  #found(jti: string): void {
    for (const listener of [...this.#foundListeners]) {
      try {
        listener(jti)
      } catch {
        // a listener's failure is its own; the lookup's answer stands
      }
    }
  }

  async remove(jti: string): Promise<void> {
    const key = this.keyPrefix + jti
    const mirror = this.mirror
    if (mirror === undefined) {
      await this.run(() => this.client.del(key))
      return
    }
    await this.durable?.remove(jti)
    const change = mirror.stamp({ op: 'remove', list: this.prefix, jti })
    await mirror.announce(change)
    mirror.apply(change, true)
  }

  /**
   * Redis expires entries itself (the mirror drops its expired copies on its heartbeat): only the durable
   * store's expired rows are deleted.
   */
  async cleanup(): Promise<number> {
    return this.durable ? this.durable.cleanup() : 0
  }

  async close(): Promise<void> {
    this.mirror?.close()
    if (this.closeClient) this.client.disconnect()
  }
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}

function isChange(value: unknown): value is RevocationChange {
  if (value === null || typeof value !== 'object') return false
  const v = value as Record<string, unknown>
  if (
    (v.by !== undefined && typeof v.by !== 'string') ||
    (v.seq !== undefined && typeof v.seq !== 'number')
  ) {
    return false
  }
  if (v.op === 'add') {
    return (
      typeof v.list === 'string' &&
      typeof v.jti === 'string' &&
      (v.ttl === undefined || (typeof v.ttl === 'number' && Number.isFinite(v.ttl) && v.ttl > 0))
    )
  }
  if (v.op === 'remove') return typeof v.list === 'string' && typeof v.jti === 'string'
  if (v.op === 'ping') return typeof v.id === 'string' && typeof v.n === 'number'
  return false
}

/**
 * The in-memory copy: jti → expiry (ms on this process's clock) or null. States: 'off' (not known to be
 * complete: the store asks Redis), 'syncing' (loading the list; announcements received meanwhile are kept
 * and replayed after it), 'on' (complete: answers). Every loss of the subscription, and every heartbeat
 * that does not come back within `maxSilenceMs`, sets 'off' and starts a new load.
 */
class Mirror {
  state: MirrorState = 'off'
  readonly channel: RevocationMirrorChannel
  private readonly entries = new ExpiringSet()
  private readonly heartbeatMs: number
  private readonly maxSilenceMs: number
  private readonly id = Math.random().toString(36).slice(2) + Date.now().toString(36)
  private readonly offs: (() => void)[] = []
  private readonly timer: NodeJS.Timeout
  /** Announcements received while syncing, replayed in order once the load is done. */
  private pending: RevocationChange[] | undefined
  /** Incremented on every loss: a load or heartbeat of an older generation counts for nothing. */
  private generation = 0
  private pingN = 0
  /** Numbers this store's changes; the newest one applied locally per jti, until its announcement is back. */
  private seq = 0
  private readonly localSeq = new Map<string, number>()
  private ownSeqBack = 0
  /** Send times of heartbeats not yet back (by number), and when the newest returned one was sent. */
  private readonly pings = new Map<number, { at: number; generation: number }>()
  private lastPingBackSentAt = 0
  private syncing = false
  private closed = false
  private readonly waiters = new Set<() => void>()
  private readonly pingWaiters = new Set<() => void>()
  private readonly reloadListeners = new Set<(isListed: (jti: string) => boolean) => void>()
  /** Changes stored durably whose Redis write and announcement failed: retried on the heartbeat. */
  private readonly unannounced = new Map<string, AnnouncedChange>()
  private checkingCopy = false
  private lastCopyCheck = 0
  private readonly pollMs: number
  private lastPoll = Date.now()
  /** While a poll runs: the jtis changed by announcements meanwhile (newer than the poll's rows). */
  private touched: Set<string> | undefined
  /** PUBLISH or, on a Cluster, SPUBLISH variants of the add/remove scripts. */
  private readonly scripts: (typeof SCRIPTS)['plain']

  constructor(
    private readonly store: RedisRevocationStore,
    private readonly client: RevocationRedisClient,
    options: RevocationMirrorOptions,
  ) {
    const channel = options?.channel
    if (
      channel === null ||
      typeof channel !== 'object' ||
      typeof channel.channel !== 'string' ||
      typeof channel.encode !== 'function' ||
      typeof channel.subscribe !== 'function' ||
      typeof channel.onSubscriptionLost !== 'function' ||
      typeof channel.onResubscribed !== 'function'
    ) {
      throw new TypeError('@trivium/auth: mirror.channel must be a RedisChannel of @trivium/redis-bus')
    }
    for (const method of ['evalsha', 'eval', 'scan', 'pttl', 'publish'] as const) {
      if (typeof client[method] !== 'function') {
        throw new TypeError(`@trivium/auth: the mirror needs an ioredis client (missing ${method})`)
      }
    }
    // The scripts publish on `client`: the channel must be on the same Redis, sharded on a Cluster.
    if (isCluster(client) !== (channel.sharded === true)) {
      throw new TypeError(
        isCluster(client)
          ? '@trivium/auth: on a Redis Cluster the mirror channel must be on the same Cluster (a RedisChannel whose RedisPubSub was given the Cluster)'
          : '@trivium/auth: the mirror channel is on a Redis Cluster but client is not: give both the same Redis',
      )
    }
    for (const method of ['spublish', 'cluster'] as const) {
      if (isCluster(client) && typeof client[method] !== 'function') {
        throw new TypeError(`@trivium/auth: the mirror needs an ioredis Cluster (missing ${method})`)
      }
    }
    this.scripts = isCluster(client) ? SCRIPTS.sharded : SCRIPTS.plain
    this.heartbeatMs = options.heartbeatMs ?? 250
    this.maxSilenceMs = options.maxSilenceMs ?? 1000
    this.pollMs = options.pollMs ?? 5000
    for (const [name, value] of [
      ['heartbeatMs', this.heartbeatMs],
      ['maxSilenceMs', this.maxSilenceMs],
      ['pollMs', this.pollMs],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new TypeError(`@trivium/auth: mirror.${name} must be a positive integer (milliseconds)`)
      }
    }
    if (this.maxSilenceMs < this.heartbeatMs) {
      throw new TypeError('@trivium/auth: mirror.maxSilenceMs must be at least heartbeatMs')
    }
    this.channel = channel
    this.offs.push(channel.subscribe((message) => this.receive(message)))
    this.offs.push(channel.onSubscriptionLost(() => this.lose()))
    this.offs.push(
      channel.onResubscribed(() => {
        this.lose()
        void this.sync()
      }),
    )
    this.timer = setInterval(() => this.tick(), this.heartbeatMs)
    this.timer.unref()
    void this.sync()
  }

  encode(change: RevocationChange): string {
    return this.channel.encode(change)
  }

  /** EVALSHA of an add/remove script (EVAL once if Redis does not know it yet): one round trip. */
  async script(sha: string, source: string, key: string, ...args: (string | number)[]): Promise<unknown> {
    // The announcement is the last argument; the channel goes just before it.
    const all = [...args.slice(0, -1), this.channel.channel, ...args.slice(-1)]
    const client = this.client as Required<RevocationRedisClient>
    try {
      return await client.evalsha(sha, 1, key, ...all)
    } catch (err) {
      if (!String((err as Error)?.message).startsWith('NOSCRIPT')) throw err
      return client.eval(source, 1, key, ...all)
    }
  }

  has(jti: string): boolean {
    return this.entries.has(jti, Date.now())
  }

  /**
   * Whether the copy may answer now: loaded, subscribed, and a heartbeat came back within maxSilenceMs.
   * Checked on every lookup (not only on the heartbeat tick), so a silent subscription is distrusted
   * exactly maxSilenceMs after the last heartbeat known to have come back was sent.
   */
  trusted(): boolean {
    if (this.state !== 'on' || !this.channel.subscribed) return false
    if (Date.now() - this.lastPingBackSentAt <= this.maxSilenceMs) return true
    this.lose()
    return false
  }

  onReload(listener: (isListed: (jti: string) => boolean) => void): () => void {
    this.reloadListeners.add(listener)
    return () => this.reloadListeners.delete(listener)
  }

  /** SET/DEL + PUBLISH in one script; with `durable`, a failure is retried on the heartbeat (and rejects). */
  async announce(change: AnnouncedChange): Promise<void> {
    const key = this.store.keyPrefix + change.jti
    const announcement = this.encode(change)
    const { add, remove } = this.scripts
    try {
      await this.store.run(() =>
        change.op === 'add'
          ? this.script(add.sha, add.source, key, change.ttl ?? '', announcement)
          : this.script(remove.sha, remove.source, key, announcement),
      )
      if ((this.unannounced.get(change.jti)?.seq ?? 0) <= (change.seq ?? 0))
        this.unannounced.delete(change.jti)
    } catch (err) {
      // Stored durably but the other instances were not told: retry until Redis takes it.
      if (this.store.durable && !this.closed) this.unannounced.set(change.jti, change)
      throw err
    }
  }

  /** Numbers a change of this store (see `RevocationChange`). */
  stamp<C extends RevocationChange & { op: 'add' | 'remove' }>(change: C): C {
    return { ...change, by: this.id, seq: ++this.seq }
  }

  /** `local`: this store made the change (applied at once, before its announcement comes back). */
  apply(change: RevocationChange, local = false): void {
    if (change.op === 'ping' || change.list !== this.store.prefix) return
    this.touched?.add(change.jti)
    // Remembered until its announcement is back (announcements of one store arrive in `seq` order).
    if (local && change.seq !== undefined && change.seq > this.ownSeqBack) {
      this.localSeq.set(change.jti, change.seq)
    }
    if (change.op === 'add') {
      this.entries.set(change.jti, change.ttl === undefined ? null : Date.now() + change.ttl * 1000)
    } else if (change.op === 'remove') {
      this.entries.delete(change.jti)
    }
  }

  get size(): number {
    return this.entries.size
  }

  whenOn(timeoutMs: number): Promise<void> {
    if (this.state === 'on') return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        this.waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(() => {
        this.waiters.delete(done)
        reject(new ServiceUnavailableException(STORE_UNAVAILABLE))
      }, timeoutMs)
      timer.unref()
      this.waiters.add(done)
    })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.lose()
    clearInterval(this.timer)
    for (const off of this.offs) off()
  }

  private receive(message: unknown): void {
    if (!isChange(message)) return
    if (message.op === 'ping') {
      if (message.id !== this.id) return
      const sent = this.pings.get(message.n)
      if (sent === undefined) return
      // Heartbeats travel in order: every older one still waiting is lost.
      for (const n of this.pings.keys()) if (n <= message.n) this.pings.delete(n)
      if (sent.generation === this.generation) {
        this.lastPingBackSentAt = Math.max(this.lastPingBackSentAt, sent.at)
        for (const waiter of [...this.pingWaiters]) waiter()
      }
      return
    }
    if (message.by === this.id && message.seq !== undefined) {
      this.ownSeqBack = Math.max(this.ownSeqBack, message.seq)
      const latest = this.localSeq.get(message.jti)
      if (latest !== undefined && message.seq < latest) return // a newer change of ours is applied
      if (latest === message.seq) this.localSeq.delete(message.jti)
    }
    if (this.pending !== undefined) this.pending.push(message)
    else this.apply(message)
  }

  /** The copy may be missing announcements from now on: stop answering from it. */
  private lose(): void {
    this.generation++
    this.state = 'off'
    this.pending = undefined
    this.pings.clear()
    this.localSeq.clear()
  }

  private ping(): void {
    const n = ++this.pingN
    const at = Date.now()
    // Heartbeats older than maxSilenceMs prove nothing any more (bounded map during an outage).
    for (const [k, sent] of this.pings) {
      if (sent.at >= at - this.maxSilenceMs) break
      this.pings.delete(k)
    }
    this.pings.set(n, { at, generation: this.generation })
    const client = this.client as Required<RevocationRedisClient>
    const payload = this.channel.encode({ op: 'ping', id: this.id, n })
    const sent = isCluster(client)
      ? client.spublish(this.channel.channel, payload)
      : client.publish(this.channel.channel, payload)
    const generation = this.generation
    sent.then(
      (receivers) => {
        // Redis delivered the heartbeat to nobody, so not even to this store's own subscription although
        // the channel says it is subscribed (on a Cluster: the channel's slot moved to a node where it is
        // not subscribed yet): announcements are being missed. Stop answering now, not after maxSilenceMs.
        if (Number(receivers) === 0 && generation === this.generation && this.channel.subscribed) this.lose()
      },
      () => {},
    )
  }

  private tick(): void {
    if (this.closed) return
    const now = Date.now()
    if (this.state === 'on' && now - this.lastPingBackSentAt > this.maxSilenceMs) {
      this.lose()
    }
    if (this.store.durable !== undefined) this.maintain(now)
    if (!this.channel.subscribed) return // nothing would come back; onResubscribed reloads
    if (this.state === 'off' && !this.syncing) void this.sync()
    // Drop expired copies (they already answer false); bounded work per tick.
    if (this.pingN % 40 === 0) {
      this.entries.sweep(now)
    }
    this.ping()
  }

  /** With `durable`: the Redis copy's check, the retries of failed announcements, the poll. */
  private maintain(now: number): void {
    if (now - this.lastCopyCheck >= COPY_CHECK_MS && !DOWN.has(this.client.status)) {
      this.lastCopyCheck = now
      void this.checkCopy()
      for (const change of this.unannounced.values()) this.announce(change).catch(() => {})
    }
    if (now - this.lastPoll >= this.pollMs && this.state === 'on' && this.touched === undefined) {
      this.lastPoll = now
      void this.poll(now)
    }
  }

  /** Adds the durable store's recent rows the copy lacks; tells the reload listeners when there were any. */
  private async poll(now: number): Promise<void> {
    const durable = this.store.durable!
    const generation = this.generation
    const touched = new Set<string>()
    this.touched = touched
    try {
      const rows = await durable.entries(now - this.pollMs - POLL_OVERLAP_MS)
      if (generation !== this.generation || this.closed) return
      let added = 0
      for (const [jti, expiresAt] of rows) {
        if (touched.has(jti) || this.has(jti)) continue
        this.entries.set(jti, expiresAt)
        added++
      }
      if (added > 0) this.reloaded()
    } catch {
      // the durable store unreachable: the next poll tries again
    } finally {
      if (this.touched === touched) this.touched = undefined
    }
  }

  private reloaded(): void {
    const isListed = (jti: string) => this.has(jti)
    for (const listener of [...this.reloadListeners]) {
      try {
        listener(isListed)
      } catch {
        // a listener's failure is its own; the copy is loaded
      }
    }
  }

  /**
   * With `durable`: the Redis keys are a copy of the durable list, marked by the key `<prefix>` holding the
   * run id of the server they were written to. A marker that is gone (restart without persistence,
   * FLUSHALL, eviction, expiry) or names another server (failover to a replica) means the copy is lost
   * or stale: every entry is written again, then the marker.
   */
  private async checkCopy(): Promise<void> {
    const durable = this.store.durable
    if (durable === undefined || this.checkingCopy || this.closed) return
    this.checkingCopy = true
    try {
      const client = this.client as Required<RevocationRedisClient>
      const prefix = this.store.keyPrefix
      // The run id of the server holding the marker (on a Cluster: the primary owning its slot).
      const server = await this.store.run(() => this.nodeOf(prefix))
      const [info, marker] = await this.store.run(() =>
        Promise.all([server.info('server'), client.get(prefix)]),
      )
      const runId = /run_id:(\w+)/.exec(info)?.[1] ?? '?'
      if (marker === runId && (await this.store.run(() => client.pexpire(prefix, MARKER_TTL_MS))) === 1)
        return
      const entries = await durable.entries()
      for (let i = 0; i < entries.length; i += 500) {
        const now = Date.now()
        await this.store.run(() =>
          Promise.all(
            entries.slice(i, i + 500).map(([jti, expiresAt]) => {
              if (expiresAt === null) return client.set(prefix + jti, '1')
              return expiresAt > now ? client.set(prefix + jti, '1', 'PX', expiresAt - now) : undefined
            }),
          ),
        )
      }
      // Written last, with the run id read before the entries: a restart meanwhile is found next time.
      await this.store.run(() => client.set(prefix, runId, 'PX', MARKER_TTL_MS))
    } catch {
      // Redis or the durable store unreachable: checked again on a later tick.
    } finally {
      this.checkingCopy = false
    }
  }

  /**
   * Loads the whole list (SCAN + PTTL) while keeping the announcements received meanwhile, replays them,
   * then waits for a heartbeat sent after the load began to come back (proof that the subscription
   * delivers): only then 'on'. Any loss meanwhile abandons the load; the heartbeat tick starts another.
   */
  private async sync(): Promise<void> {
    if (this.closed || this.syncing) return
    this.syncing = true
    try {
      if (!this.channel.subscribed) return
      const generation = this.generation
      this.state = 'syncing'
      this.pending = []
      const startedAt = Date.now()
      this.ping()
      const loaded = await this.load()
      if (generation !== this.generation || this.closed) return
      this.entries.replace(loaded)
      for (const change of this.pending ?? []) this.apply(change)
      this.pending = undefined
      if (!(await this.pingBackSince(startedAt))) {
        if (generation === this.generation) this.lose()
        return
      }
      if (generation !== this.generation || this.closed || !this.channel.subscribed) return
      this.state = 'on'
      for (const waiter of [...this.waiters]) waiter()
      // Revocations announced while the subscription was down were missed: let the owner check its
      // sessions against the fresh copy.
      this.lastPoll = Date.now()
      this.reloaded()
      if (this.store.durable !== undefined) void this.checkCopy()
    } catch {
      this.lose() // Redis unreachable: try again on a later tick
    } finally {
      this.syncing = false
    }
  }

  /** Resolves true once a heartbeat sent at or after `since` came back, false after `maxSilenceMs`. */
  private pingBackSince(since: number): Promise<boolean> {
    if (this.lastPingBackSentAt >= since) return Promise.resolve(true)
    return new Promise<boolean>((resolve) => {
      const check = () => {
        if (this.lastPingBackSentAt < since) return
        clearTimeout(timer)
        this.pingWaiters.delete(check)
        resolve(true)
      }
      const timer = setTimeout(() => {
        this.pingWaiters.delete(check)
        resolve(false)
      }, this.maxSilenceMs)
      timer.unref()
      this.pingWaiters.add(check)
    })
  }

  private async load(): Promise<Map<string, number | null>> {
    // The source of truth when there is one: the Redis keys may have been lost.
    if (this.store.durable !== undefined) return new Map(await this.store.durable.entries())
    const client = this.client as Required<RevocationRedisClient>
    const prefix = this.store.keyPrefix
    const pattern = `${escapeGlob(prefix)}*`
    const loaded = new Map<string, number | null>()
    // SCAN covers one server: on a Cluster every primary is scanned (the list is in one slot, but a
    // slot being migrated has keys on two nodes).
    const servers: Pick<RevocationRedisNode, 'scan'>[] = isCluster(client) ? client.nodes('master') : [client]
    for (const server of servers) {
      let cursor = '0'
      do {
        const [next, keys] = await this.store.run(() => server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000))
        cursor = next
        const ttls = await this.store.run(() => Promise.all(keys.map((key) => client.pttl(key))))
        const now = Date.now()
        keys.forEach((key, i) => {
          const ttl = ttls[i]!
          if (ttl === -2 || key.length === prefix.length) return // expired or deleted since SCAN; the marker
          loaded.set(key.slice(prefix.length), ttl === -1 ? null : now + ttl)
        })
      } while (cursor !== '0')
    }
    return loaded
  }

  /** The server that holds `key`: the client itself, or on a Cluster the primary owning its slot. */
  private async nodeOf(key: string): Promise<Pick<RevocationRedisNode, 'info'>> {
    const client = this.client as Required<RevocationRedisClient>
    if (!isCluster(client)) return client
    const slot = Number(await client.cluster('KEYSLOT', key))
    const owner = client.slots[slot]?.[0]
    const node = client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner)
    if (node === undefined) throw new Error(`no known primary for slot ${slot}`)
    return node
  }
}
