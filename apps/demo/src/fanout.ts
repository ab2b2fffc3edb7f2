// What several instances must share, and the single-instance fallback without Redis:
//   - push to WebSocket/TCP sessions (a PubSubBus for @trivium/websocket and @trivium/tcp);
//   - `tasks.watch` events;
//   - "close the sessions of this token / this user" after a revocation (sessions live on one instance);
//   - "this user's rights changed" for the live RBAC cache;
//   - the changes of the Redis revocation list, for its in-memory mirror on every instance.
// With Redis, everything travels over one publisher/subscriber pair (@trivium/redis-bus), in order per
// instance and once per instance; without it, in-process.
import { EventEmitter } from 'node:events'
import { RedisBus, RedisChannel, RedisPubSub } from '@trivium/redis-bus'
import type { PubSubBus } from '@trivium/wire/sessions'
import type { FastifyBaseLogger } from 'fastify'
import type { Cluster, Redis } from 'ioredis'
import type { TaskEventBus } from './tasks/events.js'
import { LocalTaskEventBus } from './tasks/events.js'
import { fromStored, type StoredTaskEvent, toStored } from './tasks/outbox.js'

export interface RevocationNotice {
  tokenId?: string
  userId?: number
}

export interface Fanout {
  /** For @trivium/websocket and @trivium/tcp (undefined = their in-memory default). */
  bus: PubSubBus | undefined
  /** The channel of the Redis revocation list's in-memory mirror (undefined without Redis). */
  revocationList: RedisChannel<unknown> | undefined
  events: TaskEventBus
  announceRevocation(notice: RevocationNotice): Promise<void>
  onRevocation(handler: (notice: RevocationNotice) => void): void
  announceRightsChange(userId: number): Promise<void>
  onRightsChange(handler: (userId: number) => void): void
  /** Called when an instance may have missed messages (Redis came back): drop caches. */
  onResync(handler: () => void): void
  ready(): Promise<void>
  close(): Promise<void>
}

/** One process: everything in memory. */
export function localFanout(): Fanout {
  const emitter = new EventEmitter()
  const events = new LocalTaskEventBus()
  return {
    bus: undefined,
    revocationList: undefined,
    events,
    async announceRevocation(notice) {
      emitter.emit('revocation', notice)
    },
    onRevocation: (handler) => emitter.on('revocation', handler),
    async announceRightsChange(userId) {
      emitter.emit('rights', userId)
    },
    onRightsChange: (handler) => emitter.on('rights', handler),
    onResync: () => {},
    ready: async () => {},
    close: async () => {
      emitter.removeAllListeners()
      await events.close()
    },
  }
}

/** A task event on Redis: the outbox row's id travels with it so a repeat can be recognised. */
type WireTaskEvent = StoredTaskEvent & { id?: string }

/** Ids of recently delivered events, oldest first: an event relayed twice is delivered once. */
const REMEMBERED_EVENT_IDS = 10_000

/**
 * Several instances on one Redis (a server, a Sentinel set or a cluster: `redis` is duplicated for the
 * publisher and the subscriber, with its settings). `prefix` keeps deployments (and tests) apart.
 */
export function redisFanout(redis: Redis | Cluster, prefix: string, logger: FastifyBaseLogger): Fanout {
  const pubsub = new RedisPubSub({ redis, logger })
  const bus = new RedisBus({ pubsub, channel: `${prefix}push` })
  const tasks = new RedisChannel<WireTaskEvent>('tasks', { pubsub, prefix })
  const revocations = new RedisChannel<RevocationNotice>('revocations', { pubsub, prefix })
  const rights = new RedisChannel<{ userId: number }>('rights', { pubsub, prefix })
  // Every change of the revocation list, announced by Redis in the same script as the change.
  const revocationList = new RedisChannel<unknown>('revocation-list', { pubsub, prefix })
  // Events reach local subscribers only through Redis, so every instance sees the same order.
  const local = new LocalTaskEventBus()
  const seen = new Set<string>()
  tasks.subscribe(({ id, ...event }) => {
    if (id !== undefined) {
      // A publish that timed out while Redis stalled may still arrive, then its retry as well.
      if (seen.has(id)) return
      seen.add(id)
      if (seen.size > REMEMBERED_EVENT_IDS) seen.delete(seen.values().next().value as string)
    }
    void local.publish(fromStored(event, id))
  })
  const events: TaskEventBus = {
    publish: async (event) => {
      await tasks.publish(event.id === undefined ? toStored(event) : { ...toStored(event), id: event.id })
    },
    subscribe: (signal) => local.subscribe(signal),
    close: () => local.close(),
  }
  return {
    bus,
    revocationList,
    events,
    async announceRevocation(notice) {
      await revocations.publish(notice)
    },
    onRevocation: (handler) => {
      revocations.subscribe((notice) => handler(notice))
    },
    async announceRightsChange(userId) {
      await rights.publish({ userId })
    },
    onRightsChange: (handler) => {
      rights.subscribe(({ userId }) => handler(userId))
    },
    onResync: (handler) => {
      pubsub.onResubscribed(handler)
    },
    ready: () => pubsub.ready(),
    close: async () => {
      await local.close()
      await pubsub.close()
    },
  }
}
