// One pair of Redis connections (a publisher and a subscriber) shared by any number of channels and
// buses. The subscriber is resubscribed by us on every reconnect (not by ioredis' autoResubscribe) so we
// know when the subscriptions are active again and can tell listeners that messages may have been missed.
// The publisher has no offline queue and no resend of unfulfilled commands: a publish is sent now or
// rejected now (bounded by publishTimeoutMs), never replayed later behind the caller's back.
// On a Redis Cluster (an ioredis `Cluster` given as `redis`) messages travel by sharded pub/sub
// (SPUBLISH/SSUBSCRIBE, Redis 7): the publisher is a duplicate of the Cluster client and the subscriber
// side one connection per node owning a subscribed channel (sharded.ts).
import type { Cluster, Redis } from 'ioredis'
import { RedisBusUnavailableError } from './errors.js'
import { ioredis } from './ioredis-library.js'
import { SETUP } from './setup-errors.js'
import { ended, ShardedSubscriber } from './sharded.js'

/** The pino-style logger part used here (`fastify.log` fits). */
export interface LoggerLike {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface RedisPubSubOptions {
  /**
   * A Redis URL, or an ioredis client that is `duplicate()`d (the client itself is not used or closed):
   * a `Redis` (plain or Sentinel-configured: PUBLISH/SUBSCRIBE) or a `Cluster` (sharded pub/sub:
   * SPUBLISH/SSUBSCRIBE, one subscriber connection per node owning a subscribed channel's slot).
   */
  redis: string | Redis | Cluster
  /** Where outages, recoveries, malformed messages and throwing handlers are logged (default: console). */
  logger?: LoggerLike
  /** A publish waits at most this long (ms) for the connection to be ready and Redis to answer (default 500). */
  publishTimeoutMs?: number
  /** Reconnect backoff cap (ms) of both connections (default 1000): the longest a recovery goes unnoticed. */
  retryMaxDelayMs?: number
}

type RawHandler = (payload: string) => void

const PENDING = new Set(['wait', 'connecting', 'connect'])

const consoleLogger: LoggerLike = {
  info: (obj, msg) => console.info(msg, obj),
  warn: (obj, msg) => console.warn(msg, obj),
  error: (obj, msg) => console.error(msg, obj),
}

/** The options, each checked in turn (the first bad one is refused), with their defaults. */
function checkedOptions(options: RedisPubSubOptions) {
  if (options === null || typeof options !== 'object') {
    throw SETUP.TRV_REDIS_BUS_PUBSUB_OPTIONS()
  }
  const { redis } = options
  const { Cluster, Redis } = ioredis()
  if (typeof redis !== 'string' && !(redis instanceof Redis) && !(redis instanceof Cluster)) {
    throw SETUP.TRV_REDIS_BUS_REDIS()
  }
  const timeoutMs = options.publishTimeoutMs ?? 500
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) {
    throw SETUP.TRV_REDIS_BUS_PUBLISH_TIMEOUT()
  }
  const retryMax = options.retryMaxDelayMs ?? 1000
  if (!Number.isSafeInteger(retryMax) || retryMax < 1) {
    throw SETUP.TRV_REDIS_BUS_RETRY_MAX_DELAY()
  }
  const logger = options.logger ?? consoleLogger
  if (typeof logger?.warn !== 'function' || typeof logger.info !== 'function') {
    throw SETUP.TRV_REDIS_BUS_LOGGER()
  }
  return { redis, timeoutMs, retryMax, logger }
}

export class RedisPubSub {
  readonly logger: LoggerLike
  /** True on a Redis Cluster: messages travel by sharded pub/sub (SPUBLISH/SSUBSCRIBE). */
  readonly sharded: boolean
  readonly #pub: Redis | Cluster
  /** The subscriber connection on one Redis (undefined on a Cluster: #shards). */
  readonly #sub: Redis | undefined
  readonly #shards: ShardedSubscriber | undefined
  readonly #timeoutMs: number
  readonly #handlers = new Map<string, Set<RawHandler>>()
  readonly #resubscribeListeners = new Set<() => void>()
  readonly #lostListeners = new Set<() => void>()
  /** Channels whose SUBSCRIBE Redis acknowledged on the subscriber's current connection. */
  readonly #active = new Set<string>()
  /** Incremented each time the subscriber's connection is lost: acknowledgements of older ones are void. */
  #subEpoch = 0
  /** The subscriber's connection has been ready since it was last lost. */
  #subUp = false
  readonly #pendingSubscribes = new Set<Promise<unknown>>()
  #subWasReady = false
  #downSince: number | undefined
  #closed = false
  #closing: Promise<void> | undefined

  constructor(options: RedisPubSubOptions) {
    const { redis, timeoutMs, retryMax, logger } = checkedOptions(options)
    const { Cluster, Redis } = ioredis()
    this.logger = logger
    this.#timeoutMs = timeoutMs

    const retryStrategy = (times: number) => Math.min(50 * 2 ** Math.min(times - 1, 10), retryMax)
    const pubOptions = {
      retryStrategy,
      lazyConnect: false,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      connectionName: 'trivium-redis-bus-pub',
    }
    const subOptions = {
      retryStrategy,
      lazyConnect: false,
      enableOfflineQueue: true,
      autoResubscribe: false,
      maxRetriesPerRequest: null,
      connectionName: 'trivium-redis-bus-sub',
    }
    this.sharded = redis instanceof Cluster
    if (redis instanceof Cluster) {
      // No offline queue: a publish while the cluster is unreachable fails now. Redirections (MOVED/ASK)
      // and CLUSTERDOWN/TRYAGAIN are retried by ioredis within publishTimeoutMs.
      // The slot table is refreshed every second (ioredis default: 5 s): a channel whose slot moved is
      // found lost, and subscribed on its new owner, within about a second even when nothing publishes.
      this.#pub = redis.duplicate([], {
        enableOfflineQueue: false,
        lazyConnect: false,
        slotsRefreshInterval: 1000,
      })
      const { password, username, tls, family, connectTimeout } = redis.options.redisOptions ?? {}
      const nodeOptions = { password, username, tls, family, connectTimeout }
      this.#sub = undefined
      this.#shards = new ShardedSubscriber(
        this.#pub,
        { ...nodeOptions, ...subOptions, connectionName: 'trivium-redis-bus-ssub' },
        {
          message: (channel, payload) => this.#dispatch(channel, payload),
          lost: () => this.#notifyLost(),
          resubscribed: () => this.#notifyResubscribed(),
          down: (connection, err) => this.#markDown(connection, err),
          up: () => this.#markUp(),
          error: (err, msg) => {
            if (!this.#closed) this.logger.error({ err }, msg)
          },
        },
      )
    } else {
      this.#shards = undefined
      if (typeof redis === 'string') {
        this.#pub = new Redis(redis, pubOptions)
        this.#sub = new Redis(redis, subOptions)
      } else {
        this.#pub = redis.duplicate(pubOptions)
        this.#sub = redis.duplicate(subOptions)
      }
      this.#listenSubscriber(this.#sub)
    }
    this.#listenPublisher(this.#pub)
  }

  /** The publisher's state follows its connection. */
  #listenPublisher(pub: Redis | Cluster): void {
    pub.on('error', (err: Error) => this.#markDown('publisher', err))
    pub.on('close', () => this.#markDown('publisher', undefined))
    pub.on('ready', () => this.#markUp())
  }

  /** The subscriber's state, subscriptions and messages (on one Redis; a Cluster's are #shards'). */
  #listenSubscriber(sub: Redis): void {
    sub.on('error', (err: Error) => this.#markDown('subscriber', err))
    sub.on('close', () => this.#markDown('subscriber', undefined))
    sub.on('ready', () => this.#markUp())
    sub.on('close', () => this.#onSubscriberLost())
    sub.on('ready', () => this.#onSubscriberReady())
    sub.on('message', (channel: string, payload: string) => this.#dispatch(channel, payload))
  }

  /** True while both connections are up (on a Cluster: the publisher and every subscriber connection). */
  get connected(): boolean {
    if (this.#pub.status !== 'ready') return false
    return this.#shards ? this.#shards.connected : this.#sub?.status === 'ready'
  }

  /**
   * Publishes a raw string on `channel`; resolves with the number of subscriber connections that got it.
   * Rejects with `RedisBusUnavailableError` when the publisher is down (at once), still connecting after
   * `publishTimeoutMs`, Redis does not answer within `publishTimeoutMs`, or the pair is closed.
   */
  async publishRaw(channel: string, payload: string): Promise<number> {
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    const status = this.#pub.status
    if (status !== 'ready') {
      // First connection (not an outage): wait for it, bounded. During an outage: fail at once.
      if (this.#downSince !== undefined || !PENDING.has(status)) {
        throw new RedisBusUnavailableError(`connection is ${status}`)
      }
      await this.#withTimeout(this.#whenReady(this.#pub, true), 'still connecting')
    }
    const sent = this.sharded
      ? (this.#pub.spublish(channel, payload) as Promise<number>)
      : this.#pub.publish(channel, payload)
    return this.#withTimeout(sent, `no reply within ${this.#timeoutMs} ms`)
  }

  /** Calls `handler` with every raw message on `channel`; returns the unsubscribe function. */
  subscribeRaw(channel: string, handler: RawHandler): () => void {
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    let set = this.#handlers.get(channel)
    if (!set) {
      set = new Set()
      this.#handlers.set(channel, set)
      if (this.#shards) this.#shards.add(channel)
      else this.#track(this.#sub!.subscribe(channel), [channel])
    }
    // Wrapped so the same function may be subscribed twice and removed once per subscription.
    const entry: RawHandler = (payload) => handler(payload)
    set.add(entry)
    return () => {
      const current = this.#handlers.get(channel)
      if (!current?.delete(entry) || current.size > 0) return
      this.#handlers.delete(channel)
      this.#active.delete(channel)
      if (this.#closed) return
      if (this.#shards) this.#shards.remove(channel)
      else this.#track(this.#sub!.unsubscribe(channel))
    }
  }

  /**
   * Calls `listener` each time the subscriber is subscribed again after a lost connection: messages
   * published while it was down were NOT received (Redis pub/sub keeps nothing), so caches fed by
   * invalidation messages should be flushed. Returns the removal function.
   */
  onResubscribed(listener: () => void): () => void {
    this.#resubscribeListeners.add(listener)
    return () => {
      this.#resubscribeListeners.delete(listener)
    }
  }

  /**
   * Calls `listener` each time the subscriber's connection is lost (at once, before any reconnect
   * attempt): from then on messages are missed until `onResubscribed` fires. Returns the removal function.
   */
  onSubscriptionLost(listener: () => void): () => void {
    this.#lostListeners.add(listener)
    return () => {
      this.#lostListeners.delete(listener)
    }
  }

  /**
   * True while `channel` is subscribed on a live connection: Redis acknowledged its SUBSCRIBE on the
   * subscriber's current connection, and that connection has not been lost since.
   */
  isSubscribed(channel: string): boolean {
    if (this.#closed) return false
    if (this.#shards) return this.#shards.isSubscribed(channel)
    return this.#sub!.status === 'ready' && this.#active.has(channel)
  }

  /**
   * Resolves when the publisher is connected and every subscription made so far is acknowledged by Redis
   * (messages published from then on are received). Rejects after `timeoutMs` (default 10 000).
   */
  async ready(timeoutMs = 10_000): Promise<void> {
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RedisBusUnavailableError(`not ready within ${timeoutMs} ms`)),
        timeoutMs,
      )
    })
    try {
      if (this.#shards) {
        await Promise.race([this.#whenReady(this.#pub), timeout])
        // Every channel placed on its node and acknowledged (placement waits for the slot table).
        while (![...this.#handlers.keys()].every((c) => this.isSubscribed(c))) {
          if (this.#closed) throw new RedisBusUnavailableError('closed')
          const settled = Promise.all(this.#shards.pending)
          await Promise.race([settled.then(() => new Promise((r) => setTimeout(r, 10))), timeout])
        }
        return
      }
      await Promise.race([
        Promise.all([this.#whenReady(this.#pub), this.#whenReady(this.#sub!), ...this.#pendingSubscribes]),
        timeout,
      ])
      // Subscriptions made while we waited.
      if (this.#pendingSubscribes.size > 0)
        await Promise.race([Promise.all(this.#pendingSubscribes), timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Closes both connections (pending publishes reject); no handle is left open. Idempotent. */
  close(): Promise<void> {
    if (this.#closing) return this.#closing
    this.#closed = true
    this.#handlers.clear()
    this.#active.clear()
    this.#resubscribeListeners.clear()
    this.#lostListeners.clear()
    const done = Promise.all([ended(this.#pub), this.#sub ? ended(this.#sub) : this.#shards!.close()]).then(
      () => undefined,
    )
    this.#closing = done
    return done
  }

  /** Waits for a SUBSCRIBE/UNSUBSCRIBE; `channels`: mark them active once acknowledged (same connection). */
  #track(promise: Promise<unknown>, channels?: string[]): void {
    const epoch = this.#subEpoch
    const tracked = promise.then(
      () => {
        if (channels === undefined || epoch !== this.#subEpoch || this.#closed) return
        for (const channel of channels) if (this.#handlers.has(channel)) this.#active.add(channel)
      },
      (err: Error) => {
        // Only when closed (flushed queue) or Redis refused the command; logged, never thrown.
        if (!this.#closed) this.logger.error({ err }, '@trivium/redis-bus: SUBSCRIBE/UNSUBSCRIBE failed')
      },
    )
    this.#pendingSubscribes.add(tracked)
    void tracked.finally(() => this.#pendingSubscribes.delete(tracked))
  }

  #onSubscriberReady(): void {
    this.#subUp = true
    const reconnect = this.#subWasReady
    this.#subWasReady = true
    const channels = [...this.#handlers.keys()]
    if (channels.length === 0) {
      if (reconnect) this.#notifyResubscribed()
      return
    }
    const done = this.#sub!.subscribe(...channels)
    this.#track(done, channels)
    if (reconnect) {
      done.then(
        () => this.#notifyResubscribed(),
        () => {},
      )
    }
  }

  #onSubscriberLost(): void {
    this.#subEpoch++
    this.#active.clear()
    // Failed reconnect attempts also emit 'close': only the loss of a working connection is reported.
    const wasUp = this.#subUp
    this.#subUp = false
    if (this.#closed || !wasUp) return
    this.#notifyLost()
  }

  #notifyLost(): void {
    if (this.#closed) return
    for (const listener of [...this.#lostListeners]) {
      try {
        listener()
      } catch (err) {
        this.logger.error({ err }, '@trivium/redis-bus: onSubscriptionLost listener threw')
      }
    }
  }

  #notifyResubscribed(): void {
    if (this.#closed) return
    for (const listener of [...this.#resubscribeListeners]) {
      try {
        listener()
      } catch (err) {
        this.logger.error({ err }, '@trivium/redis-bus: onResubscribed listener threw')
      }
    }
  }

  #dispatch(channel: string, payload: string): void {
    const set = this.#handlers.get(channel)
    if (!set) return
    for (const handler of [...set]) {
      try {
        handler(payload)
      } catch (err) {
        this.logger.error({ err, channel }, '@trivium/redis-bus: message handler threw')
      }
    }
  }

  #markDown(connection: string, err: Error | undefined): void {
    if (this.#closed) return
    if (this.#downSince !== undefined) return
    this.#downSince = Date.now()
    this.logger.warn(
      { connection, err: err ? { message: err.message, code: (err as { code?: string }).code } : undefined },
      '@trivium/redis-bus: Redis unreachable; publishes fail and messages published meanwhile are lost until it returns',
    )
  }

  #markUp(): void {
    if (this.#closed || this.#downSince === undefined || !this.connected) return
    const downMs = Date.now() - this.#downSince
    this.#downSince = undefined
    this.logger.info({ downMs }, '@trivium/redis-bus: Redis reachable again')
  }

  /** Resolves on 'ready'; rejects on 'end', and with `failFast` also on the first failed attempt. */
  #whenReady(conn: Redis | Cluster, failFast = false): Promise<void> {
    if (conn.status === 'ready') return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        conn.off('ready', onReady)
        conn.off('end', onEnd)
        conn.off('close', onClose)
      }
      const onReady = () => {
        cleanup()
        resolve()
      }
      const onEnd = () => {
        cleanup()
        reject(new RedisBusUnavailableError('closed'))
      }
      const onClose = () => {
        cleanup()
        reject(new RedisBusUnavailableError('connection failed'))
      }
      conn.once('ready', onReady)
      conn.once('end', onEnd)
      if (failFast) conn.once('close', onClose)
    })
  }

  #withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      // After the due turn's I/O (setImmediate): a reply already in the socket of a process that was
      // blocked past the timeout wins the race; the process's own lag is not Redis being down.
      timer = setTimeout(
        () => setImmediate(() => reject(new RedisBusUnavailableError(what))),
        this.#timeoutMs,
      )
    })
    return Promise.race([promise, timeout])
      .catch((err: unknown) => {
        if (err instanceof RedisBusUnavailableError) throw err
        throw new RedisBusUnavailableError((err as Error)?.message ?? String(err), { cause: err })
      })
      .finally(() => clearTimeout(timer))
  }
}
