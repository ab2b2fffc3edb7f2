// Generic JSON pub/sub on one named Redis channel, for cross-instance signals (token revocation, RBAC
// cache invalidation, task events). Envelope: {"v":1,"from":"<instance id>","data":<message>}.

import { RedisBusUnavailableError } from './errors.js'
import { instanceId } from './instance-id.js'
import { reportLag, sendTime } from './lag.js'
import type { RedisPubSub } from './pubsub.js'
import { SETUP } from './setup-errors.js'
import { type ConnectionOptions, DropLog, resolvePubSub, validatePrefix } from './shared.js'

export interface MessageMeta {
  /** `instanceId()` of the publishing process. */
  from: string
  /** True when this process published it. */
  local: boolean
}

export type RedisChannelOptions<T> = ConnectionOptions & {
  /** Prepended to the channel name (default `trivium:`). */
  prefix?: string
  /** Type guard for received messages; a message it rejects is ignored and logged. */
  validate?: (message: unknown) => message is T
}

export class RedisChannel<T> {
  /** The Redis channel name (prefix + name). */
  readonly channel: string
  readonly #pubsub: RedisPubSub
  readonly #owned: boolean
  readonly #validate: ((message: unknown) => message is T) | undefined
  readonly #drops: DropLog
  readonly #unsubscribes = new Set<() => void>()
  #closed = false

  constructor(name: string, options: RedisChannelOptions<T>) {
    validatePrefix(name, 'channel name')
    const prefix = validatePrefix(options?.prefix ?? 'trivium:', 'prefix')
    if (options.validate !== undefined && typeof options.validate !== 'function') {
      throw SETUP.TRV_REDIS_BUS_VALIDATE()
    }
    const { pubsub, owned } = resolvePubSub(options)
    this.channel = prefix + name
    this.#pubsub = pubsub
    this.#owned = owned
    this.#validate = options.validate
    this.#drops = new DropLog(pubsub, this.channel)
  }

  /**
   * Sends `message` (any JSON value) to every subscriber on every instance, this one included (delivery
   * is always through Redis). Resolves with the number of subscribed connections that received it.
   * Rejects with `RedisBusUnavailableError` when Redis is unreachable (see README, "Failure behaviour").
   */
  publish(message: T): Promise<number> {
    if (this.#closed) return Promise.reject(new RedisBusUnavailableError('closed'))
    let payload: string
    try {
      payload = this.encode(message)
    } catch (err) {
      return Promise.reject(err)
    }
    return this.#pubsub.publishRaw(this.channel, payload)
  }

  /**
   * The exact payload `publish(message)` sends (the v1 envelope, sent now, from this instance), for a
   * caller that publishes it itself, e.g. with `PUBLISH <channel> <payload>` (`SPUBLISH` when `sharded`)
   * inside a Lua script or MULTI so that the change and its announcement happen atomically. Throws
   * TypeError if not JSON.
   */
  encode(message: T): string {
    const data = JSON.stringify(message)
    if (data === undefined) throw new TypeError('@trivium/redis-bus: message is not JSON')
    return `{"v":1,"from":${JSON.stringify(instanceId())}${sendTime()},"data":${data}}`
  }

  /** True on a Redis Cluster: the channel is a shard channel (`SPUBLISH`, not `PUBLISH`). */
  get sharded(): boolean {
    return this.#pubsub.sharded
  }

  /**
   * True while this channel is subscribed on a live connection (Redis acknowledged the SUBSCRIBE on the
   * subscriber's current connection); false before, during an outage, until resubscribed, and after close.
   */
  get subscribed(): boolean {
    return !this.#closed && this.#pubsub.isSubscribed(this.channel)
  }

  /** Calls `handler` for every message received; returns the unsubscribe function. */
  subscribe(handler: (message: T, meta: MessageMeta) => void): () => void {
    if (typeof handler !== 'function') throw SETUP.TRV_REDIS_BUS_HANDLER()
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    const self = instanceId()
    const off = this.#pubsub.subscribeRaw(this.channel, (payload) => {
      let envelope: unknown
      try {
        envelope = JSON.parse(payload)
      } catch {
        this.#drops.drop('not JSON', payload)
        return
      }
      if (
        envelope === null ||
        typeof envelope !== 'object' ||
        (envelope as { v?: unknown }).v !== 1 ||
        typeof (envelope as { from?: unknown }).from !== 'string' ||
        !('data' in envelope)
      ) {
        this.#drops.drop('not a v1 envelope', payload)
        return
      }
      const { from, data, at } = envelope as { from: string; data: unknown; at?: unknown }
      reportLag(this.channel, at)
      if (this.#validate && !this.#validate(data)) {
        this.#drops.drop('rejected by validate', payload)
        return
      }
      handler(data as T, { from, local: from === self })
    })
    const unsubscribe = () => {
      if (this.#unsubscribes.delete(unsubscribe)) off()
    }
    this.#unsubscribes.add(unsubscribe)
    return unsubscribe
  }

  /** See `RedisPubSub.onResubscribed`: messages may have been missed while the connection was down. */
  onResubscribed(listener: () => void): () => void {
    const off = this.#pubsub.onResubscribed(listener)
    const remove = () => {
      if (this.#unsubscribes.delete(remove)) off()
    }
    this.#unsubscribes.add(remove)
    return remove
  }

  /** See `RedisPubSub.onSubscriptionLost`: from then on messages are missed until `onResubscribed`. */
  onSubscriptionLost(listener: () => void): () => void {
    const off = this.#pubsub.onSubscriptionLost(listener)
    const remove = () => {
      if (this.#unsubscribes.delete(remove)) off()
    }
    this.#unsubscribes.add(remove)
    return remove
  }

  /** Resolves when connected and this channel's subscriptions are active in Redis. */
  ready(timeoutMs?: number): Promise<void> {
    return this.#pubsub.ready(timeoutMs)
  }

  /** Removes this channel's subscriptions, and closes the connections if the channel opened them. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const unsubscribe of [...this.#unsubscribes]) unsubscribe()
    if (this.#owned) await this.#pubsub.close()
  }
}

/** `new RedisChannel<T>(name, options)`. */
export function createRedisChannel<T>(name: string, options: RedisChannelOptions<T>): RedisChannel<T> {
  return new RedisChannel<T>(name, options)
}
