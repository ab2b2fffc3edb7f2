// The subscriber side of RedisPubSub on a Redis Cluster: sharded pub/sub (Redis 7 SSUBSCRIBE), so a
// message is delivered by the shard that owns its channel's slot instead of being broadcast over the
// cluster bus to every node. One plain connection per primary that owns a subscribed channel's slot; the
// placement follows the cluster's slot table (`Cluster#slots`, refreshed by ioredis on MOVED and every
// few seconds). A channel whose slot moved to another node (a migration or a failover) counts as lost
// until it is subscribed on the new owner, exactly like a lost connection on one Redis.
import type { Cluster, Redis, RedisOptions } from 'ioredis'
import { ioredis } from './ioredis-library.js'

/** What the subscriber reports to its RedisPubSub. */
export interface ShardedEvents {
  message(channel: string, payload: string): void
  /** A channel that was subscribed is not any more (its connection was lost, or its slot moved). */
  lost(): void
  /** Every channel lost since is subscribed again (messages published meanwhile were missed). */
  resubscribed(): void
  down(connection: string, err: Error | undefined): void
  up(): void
  error(err: Error, msg: string): void
}

interface Shard {
  readonly key: string
  readonly conn: Redis
  readonly channels: Set<string>
  /** Incremented each time the connection is lost: acknowledgements of older ones are void. */
  epoch: number
  up: boolean
}

/** The hash slot of `key` (CRC16/XMODEM of the hash tag, or of the whole key, mod 16384). */
export function keySlot(key: string): number {
  const open = key.indexOf('{')
  if (open !== -1) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) key = key.slice(open + 1, close)
  }
  let crc = 0
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

export class ShardedSubscriber {
  readonly #cluster: Cluster
  readonly #options: RedisOptions
  readonly #events: ShardedEvents
  readonly #shards = new Map<string, Shard>()
  /** Channel → the shard it is subscribed on (or being subscribed on). */
  readonly #placed = new Map<string, Shard>()
  /** Channels not placed yet: the cluster is not ready or its slot has no known owner. */
  readonly #unplaced = new Set<string>()
  /** Channels whose SSUBSCRIBE the owner acknowledged on its current connection. */
  readonly #active = new Set<string>()
  /** Channels lost and not yet subscribed again (resubscribed fires when this empties). */
  readonly #lost = new Set<string>()
  readonly pending = new Set<Promise<unknown>>()
  #closed = false

  /** `cluster`: the publisher (its slot table is used); `options`: of the per-node connections. */
  constructor(cluster: Cluster, options: RedisOptions, events: ShardedEvents) {
    this.#cluster = cluster
    this.#options = options
    this.#events = events
    cluster.on('ready', () => this.#replace())
    cluster.on('refresh', () => this.#replace())
  }

  /** True while every node holding subscribed channels is connected. */
  get connected(): boolean {
    for (const shard of this.#shards.values()) if (shard.channels.size > 0 && !shard.up) return false
    return this.#unplaced.size === 0
  }

  isSubscribed(channel: string): boolean {
    const shard = this.#placed.get(channel)
    return shard?.up === true && this.#active.has(channel)
  }

  add(channel: string): void {
    this.#place(channel)
  }

  remove(channel: string): void {
    this.#unplaced.delete(channel)
    this.#lost.delete(channel)
    this.#active.delete(channel)
    const shard = this.#placed.get(channel)
    if (!shard) return
    this.#placed.delete(channel)
    shard.channels.delete(channel)
    if (shard.conn.status === 'ready') this.#track(shard.conn.sunsubscribe(channel))
    this.#dropIfEmpty(shard)
  }

  close(): Promise<void> {
    this.#closed = true
    const shards = [...this.#shards.values()]
    this.#shards.clear()
    this.#placed.clear()
    this.#active.clear()
    return Promise.all(shards.map((s) => ended(s.conn))).then(() => undefined)
  }

  /** Subscribes `channel` on the node owning its slot (later, when the slot table is not known yet). */
  #place(channel: string): void {
    if (this.#closed) return
    const owner = this.#cluster.status === 'ready' ? this.#cluster.slots[keySlot(channel)]?.[0] : undefined
    if (owner === undefined) {
      this.#unplaced.add(channel)
      return
    }
    this.#unplaced.delete(channel)
    const shard = this.#shards.get(owner) ?? this.#open(owner)
    shard.channels.add(channel)
    this.#placed.set(channel, shard)
    if (shard.conn.status === 'ready') this.#subscribe(shard, [channel])
  }

  /** After the slot table changed: channels whose slot has another owner now move there. */
  #replace(): void {
    if (this.#closed) return
    let lost = false
    for (const [channel, shard] of [...this.#placed]) {
      const owner = this.#cluster.slots[keySlot(channel)]?.[0]
      if (owner === shard.key) continue
      this.#placed.delete(channel)
      shard.channels.delete(channel)
      if (this.#active.delete(channel)) {
        lost = true
        this.#lost.add(channel)
      }
      if (shard.conn.status === 'ready') this.#track(shard.conn.sunsubscribe(channel))
      this.#dropIfEmpty(shard)
      this.#unplaced.add(channel)
    }
    if (lost) this.#events.lost()
    for (const channel of [...this.#unplaced]) this.#place(channel)
  }

  #open(key: string): Shard {
    const at = key.lastIndexOf(':')
    const conn = new (ioredis().Redis)({
      ...this.#options,
      host: key.slice(0, at),
      port: Number(key.slice(at + 1)),
    })
    const shard: Shard = { key, conn, channels: new Set(), epoch: 0, up: false }
    this.#shards.set(key, shard)
    // A shard dropped (no channels left) or closed reports nothing any more.
    const current = () => !this.#closed && this.#shards.get(key) === shard
    conn.on('error', (err: Error) => {
      if (current()) this.#events.down(`subscriber ${key}`, err)
    })
    conn.on('ready', () => {
      if (!current()) return
      shard.up = true
      this.#events.up()
      if (shard.channels.size > 0) this.#subscribe(shard, [...shard.channels])
    })
    conn.on('close', () => {
      shard.epoch++
      const wasUp = shard.up
      shard.up = false
      if (!current()) return
      this.#events.down(`subscriber ${key}`, undefined)
      let lost = false
      for (const channel of shard.channels) {
        if (this.#active.delete(channel)) {
          lost = true
          this.#lost.add(channel)
        }
      }
      if (wasUp && lost) this.#events.lost()
      // The node may be failing over: ask the cluster who owns its slots now.
      this.#cluster.refreshSlotsCache()
    })
    conn.on('smessage', (channel: string, payload: string) => {
      if (current()) this.#events.message(channel, payload)
    })
    return shard
  }

  /** SSUBSCRIBE each channel (a command's channels must share a slot); active once acknowledged. */
  #subscribe(shard: Shard, channels: string[]): void {
    const epoch = shard.epoch
    for (const channel of channels) {
      const done = shard.conn.ssubscribe(channel).then(
        () => {
          if (this.#closed || epoch !== shard.epoch || this.#placed.get(channel) !== shard) return
          this.#active.add(channel)
          if (this.#lost.delete(channel) && this.#lost.size === 0) this.#events.resubscribed()
        },
        (err: Error) => {
          if (this.#closed) return
          // MOVED: the slot table was stale; the refresh it triggers places the channel again.
          if (String(err?.message).startsWith('MOVED')) this.#cluster.refreshSlotsCache()
          else this.#events.error(err, '@trivium/redis-bus: SSUBSCRIBE failed')
        },
      )
      this.#track(done)
    }
  }

  #track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => {})
    this.pending.add(tracked)
    void tracked.finally(() => this.pending.delete(tracked))
  }

  #dropIfEmpty(shard: Shard): void {
    if (shard.channels.size > 0 || this.#closed) return
    this.#shards.delete(shard.key)
    void ended(shard.conn)
  }
}

/** Closes `conn`; resolves once no socket is left. */
export function ended(conn: Redis | Cluster): Promise<void> {
  const end = new Promise<void>((resolve) => conn.once('end', resolve))
  const connected = conn.status === 'ready' || conn.status === 'connect'
  conn.disconnect()
  // Between two reconnect attempts there is no socket: disconnect() only clears the retry timer
  // and ioredis emits no 'end'; nothing is left open. A Cluster without a connected node emits none
  // either (its node connections end by themselves).
  if (conn.status === 'end' || conn.status === 'reconnecting') return Promise.resolve()
  return conn instanceof ioredis().Redis || connected ? end : Promise.resolve()
}
