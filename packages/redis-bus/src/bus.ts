// A PubSubBus for SessionHub over one Redis channel: every instance's hub receives every push and
// delivers it to its own sessions. A publish is delivered only through the subscription (never also
// locally), so each instance, the publishing one included, delivers it exactly once, in publish order
// per publisher. Envelope: {"v":1,"from":"<instance id>","topic":"…","userId":"…","message":<json>}.

import type { PubSubBus, PushEnvelope } from '@trivium/wire/sessions'
import { RedisBusUnavailableError } from './errors.js'
import { instanceId } from './instance-id.js'
import { reportLag, sendTime } from './lag.js'
import type { RedisPubSub } from './pubsub.js'
import { type ConnectionOptions, DropLog, resolvePubSub, validatePrefix } from './shared.js'

export type RedisBusOptions = ConnectionOptions & {
  /** The Redis channel the pushes travel on (default `trivium:push`). Instances that share it share pushes. */
  channel?: string
}

export class RedisBus implements PubSubBus {
  readonly channel: string
  readonly #pubsub: RedisPubSub
  readonly #owned: boolean
  readonly #drops: DropLog
  readonly #unsubscribes = new Set<() => void>()
  readonly #from: string
  #closed = false

  constructor(options: RedisBusOptions) {
    const { pubsub, owned } = resolvePubSub(options)
    this.channel = validatePrefix(options.channel ?? 'trivium:push', 'channel')
    this.#pubsub = pubsub
    this.#owned = owned
    this.#drops = new DropLog(pubsub, this.channel)
    this.#from = JSON.stringify(instanceId())
  }

  /** Rejects with `RedisBusUnavailableError` when Redis is unreachable; nothing is delivered anywhere then. */
  async publish(envelope: PushEnvelope): Promise<void> {
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    // `json` is JSON text made by SessionHub; it is embedded as is (not re-escaped).
    const user = envelope.userId === undefined ? '' : `,"userId":${JSON.stringify(envelope.userId)}`
    const payload = `{"v":1,"from":${this.#from}${sendTime()},"topic":${JSON.stringify(envelope.topic)}${user},"message":${envelope.json}}`
    await this.#pubsub.publishRaw(this.channel, payload)
  }

  subscribe(listener: (envelope: PushEnvelope) => void): () => void {
    if (this.#closed) throw new RedisBusUnavailableError('closed')
    const off = this.#pubsub.subscribeRaw(this.channel, (payload) => {
      const envelope = this.#decode(payload)
      if (envelope) listener(envelope)
    })
    const unsubscribe = () => {
      if (this.#unsubscribes.delete(unsubscribe)) off()
    }
    this.#unsubscribes.add(unsubscribe)
    return unsubscribe
  }

  /** Resolves when connected and the bus's subscription is active in Redis. */
  ready(timeoutMs?: number): Promise<void> {
    return this.#pubsub.ready(timeoutMs)
  }

  /** Removes this bus's subscriptions, and closes the connections if the bus opened them. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const unsubscribe of [...this.#unsubscribes]) unsubscribe()
    if (this.#owned) await this.#pubsub.close()
  }

  #decode(payload: string): PushEnvelope | undefined {
    let value: unknown
    try {
      value = JSON.parse(payload)
    } catch {
      this.#drops.drop('not JSON', payload)
      return undefined
    }
    if (value === null || typeof value !== 'object') {
      this.#drops.drop('not an object', payload)
      return undefined
    }
    const { v, topic, userId, message, at } = value as Record<string, unknown>
    if (
      v !== 1 ||
      typeof topic !== 'string' ||
      (userId !== undefined && typeof userId !== 'string') ||
      !Object.hasOwn(value, 'message')
    ) {
      this.#drops.drop('not a v1 push envelope', payload)
      return undefined
    }
    reportLag(this.channel, at)
    const json = JSON.stringify(message)
    return userId === undefined ? { topic, json } : { topic, userId, json }
  }
}
