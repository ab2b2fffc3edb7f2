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
import { ServiceUnavailableException } from '@trivium/core'
import { DOWN, hashTagOf, isCluster } from './redis-revocation-commands.js'
import {
  checkJti,
  checkTtl,
  type DurableRevocationStore,
  type RevocationStore,
  STORE_UNAVAILABLE,
} from './revocation.js'
import { Mirror, type MirrorState } from './revocation-mirror.js'
import { SETUP } from './setup-errors.js'

export { ADD_AND_ANNOUNCE_LUA, REMOVE_AND_ANNOUNCE_LUA } from './redis-revocation-commands.js'
export type { MirrorState } from './revocation-mirror.js'

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
      throw SETUP.TRV_AUTH_REDIS_CLIENT()
    }
    this.client = options.client
    this.prefix = options.prefix ?? DEFAULT_REDIS_PREFIX
    if (typeof this.prefix !== 'string') throw SETUP.TRV_AUTH_REDIS_PREFIX()
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
        throw SETUP.TRV_AUTH_DURABLE()
      }
      if (options.mirror === undefined) throw SETUP.TRV_AUTH_DURABLE_MIRROR()
      for (const method of ['get', 'info', 'pexpire'] as const) {
        if (typeof this.client[method] !== 'function') {
          throw SETUP.TRV_AUTH_DURABLE_CLIENT(method)
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
          // After the due turn's I/O: a reply already in the socket of a lagging process wins.
          timer = setTimeout(
            () => setImmediate(() => reject(new ServiceUnavailableException(STORE_UNAVAILABLE))),
            this.timeoutMs,
          )
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
