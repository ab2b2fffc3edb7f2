// Server-side session registry and push fan-out (`@trivium/wire/sessions`): the sessions of the frame
// transports (@trivium/frame-session, for WebSocket and TCP) and core's HTTP event streams register
// here, and @trivium/redis-bus carries its pushes. In wire, under server/, because wire is the one
// layer all four share (redis-bus depends on wire only, and core, below frame-session, uses it too);
// the client never imports it. Plain JavaScript, no I/O: a pluggable bus carries push messages between
// server instances (in-memory by default; a Redis bus implements the same two methods).

/** A push message as it travels on the bus: the target and the message as JSON text. */
export interface PushEnvelope {
  topic: string
  /** Set for `toUser`: only that user's sessions receive it (whatever they subscribed to). */
  userId?: string
  /** The message, `JSON.stringify`-ed once by the publisher. */
  json: string
}

/** Carries push messages to every server instance (each delivers to its own sessions). */
export interface PubSubBus {
  publish(envelope: PushEnvelope): void | Promise<void>
  /** Registers the local delivery function; returns an unsubscribe function. */
  subscribe(listener: (envelope: PushEnvelope) => void): () => void
}

/** Delivers in-process, synchronously. The default bus (one server instance). */
export class MemoryBus implements PubSubBus {
  readonly #listeners = new Set<(envelope: PushEnvelope) => void>()
  publish(envelope: PushEnvelope): void {
    for (const listener of this.#listeners) listener(envelope)
  }
  subscribe(listener: (envelope: PushEnvelope) => void): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }
}

/** One open connection (WebSocket or TCP) as the hub sees it. */
export interface Session {
  readonly id: string
  readonly protocol: string
  /** The user the connection authenticated as (set by the transport through `hub.identify`). */
  userId: string | undefined
  /** The token id (`jti`) the connection authenticated with. */
  tokenId: string | undefined
  readonly topics: Set<string>
  /** Sends one PUSH frame. Must not throw. */
  push(topic: string, json: string): void
  /** Closes the connection because its token was revoked/expired or an operator asked. Must not throw. */
  close(reason: string): void
}

export type SessionMatch =
  | string
  | { tokenId?: string; userId?: string | number }
  | ((session: Readonly<Session>) => boolean)

/** Most topics one session may subscribe to. */
export const MAX_TOPICS_PER_SESSION = 100

export class SessionHub {
  readonly #sessions = new Set<Session>()
  readonly #byUser = new Map<string, Set<Session>>()
  readonly #byTopic = new Map<string, Set<Session>>()
  readonly #bus: PubSubBus
  readonly #unsubscribe: () => void

  constructor(bus: PubSubBus = new MemoryBus()) {
    this.#bus = bus
    this.#unsubscribe = bus.subscribe((envelope) => this.#deliver(envelope))
  }

  get size(): number {
    return this.#sessions.size
  }

  sessions(): Session[] {
    return [...this.#sessions]
  }

  add(session: Session): void {
    this.#sessions.add(session)
  }

  delete(session: Session): void {
    if (!this.#sessions.delete(session)) return
    if (session.userId !== undefined) removeFrom(this.#byUser, session.userId, session)
    for (const topic of session.topics) removeFrom(this.#byTopic, topic, session)
    session.topics.clear()
  }

  /** Records who a session is (after an authenticated call, or at connect time). */
  identify(session: Session, userId: string | number, tokenId?: string): void {
    const id = String(userId)
    if (session.userId !== undefined && session.userId !== id)
      removeFrom(this.#byUser, session.userId, session)
    session.userId = id
    if (tokenId !== undefined) session.tokenId = tokenId
    if (this.#sessions.has(session)) addTo(this.#byUser, id, session)
  }

  /** Returns false when the session already has `MAX_TOPICS_PER_SESSION` topics. */
  subscribe(session: Session, topic: string): boolean {
    if (session.topics.has(topic)) return true
    if (session.topics.size >= MAX_TOPICS_PER_SESSION) return false
    session.topics.add(topic)
    addTo(this.#byTopic, topic, session)
    return true
  }

  unsubscribe(session: Session, topic: string): void {
    if (session.topics.delete(topic)) removeFrom(this.#byTopic, topic, session)
  }

  /** Pushes `message` (any JSON value) to every connection of `userId`, under `topic`. */
  async toUser(userId: string | number, topic: string, message: unknown): Promise<void> {
    await this.#bus.publish({ topic, userId: String(userId), json: JSON.stringify(message) ?? 'null' })
  }

  /** Pushes `message` (any JSON value) to every connection subscribed to `topic`. */
  async toTopic(topic: string, message: unknown): Promise<void> {
    await this.#bus.publish({ topic, json: JSON.stringify(message) ?? 'null' })
  }

  /**
   * Closes the sessions that match: a token id (`jti`) string, `{ tokenId }`, `{ userId }`, or a
   * predicate. Returns how many were closed. Local to this instance.
   */
  closeSessions(match: SessionMatch, reason = 'Session revoked'): number {
    const test =
      typeof match === 'function'
        ? match
        : typeof match === 'string'
          ? (s: Session) => s.tokenId === match
          : (s: Session) =>
              (match.tokenId === undefined || s.tokenId === match.tokenId) &&
              (match.userId === undefined || s.userId === String(match.userId)) &&
              (match.tokenId !== undefined || match.userId !== undefined)
    let closed = 0
    for (const session of [...this.#sessions]) {
      let hit = false
      try {
        hit = test(session)
      } catch {
        hit = false
      }
      if (!hit) continue
      closed++
      this.delete(session)
      session.close(reason)
    }
    return closed
  }

  /** Stops receiving from the bus. */
  close(): void {
    this.#unsubscribe()
  }

  #deliver(envelope: PushEnvelope): void {
    const targets =
      envelope.userId !== undefined ? this.#byUser.get(envelope.userId) : this.#byTopic.get(envelope.topic)
    if (!targets) return
    for (const session of [...targets]) session.push(envelope.topic, envelope.json)
  }
}

function addTo(map: Map<string, Set<Session>>, key: string, session: Session): void {
  let set = map.get(key)
  if (!set) {
    set = new Set()
    map.set(key, set)
  }
  set.add(session)
}

function removeFrom(map: Map<string, Set<Session>>, key: string, session: Session): void {
  const set = map.get(key)
  if (!set) return
  set.delete(session)
  if (set.size === 0) map.delete(key)
}
