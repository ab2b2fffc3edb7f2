// Option handling shared by RedisChannel and RedisBus: either their own connection pair (closed with
// them) or a shared RedisPubSub (left open; only their own subscriptions are removed).
import { RedisPubSub, type RedisPubSubOptions } from './pubsub.js'
import { SETUP } from './setup-errors.js'

export type ConnectionOptions = RedisPubSubOptions | { pubsub: RedisPubSub }

export function resolvePubSub(options: ConnectionOptions): { pubsub: RedisPubSub; owned: boolean } {
  if (options === null || typeof options !== 'object') {
    throw SETUP.TRV_REDIS_BUS_OPTIONS()
  }
  if ('pubsub' in options && options.pubsub !== undefined) {
    if (!(options.pubsub instanceof RedisPubSub)) {
      throw SETUP.TRV_REDIS_BUS_PUBSUB()
    }
    return { pubsub: options.pubsub, owned: false }
  }
  return { pubsub: new RedisPubSub(options as RedisPubSubOptions), owned: true }
}

export function validatePrefix(value: unknown, option: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw SETUP.TRV_REDIS_BUS_NAME(option)
  }
  return value
}

/** Logs malformed messages: the first one, then at most one line per 10 s with how many were dropped. */
export class DropLog {
  #dropped = 0
  #lastAt = 0
  constructor(
    private readonly pubsub: RedisPubSub,
    private readonly channel: string,
  ) {}
  drop(reason: string, payload: string): void {
    this.#dropped++
    const now = Date.now()
    if (now - this.#lastAt < 10_000) return
    this.#lastAt = now
    this.pubsub.logger.warn(
      { channel: this.channel, reason, dropped: this.#dropped, sample: payload.slice(0, 200) },
      '@trivium/redis-bus: malformed message ignored',
    )
    this.#dropped = 0
  }
}
