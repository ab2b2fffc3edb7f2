// The in-memory mirror of the revocation list (README "Revocation list", PROTOCOL.md "Revocation window"):
// a copy kept complete by the announcements every store publishes with its change, trusted only while a
// heartbeat on the same channel comes back within `maxSilenceMs`, reloaded after every loss.
import { ServiceUnavailableException } from '@trivium/core'
import { ExpiringSet } from './expiring-set.js'
import type {
  RedisRevocationStore,
  RevocationChange,
  RevocationMirrorChannel,
  RevocationMirrorOptions,
  RevocationRedisClient,
} from './redis-revocation.js'
import { DOWN, isCluster, SCRIPTS, scanList } from './redis-revocation-commands.js'
import { STORE_UNAVAILABLE } from './revocation.js'
import { reconcileRedisCopy } from './revocation-reconciliation.js'
import { SETUP } from './setup-errors.js'

/** How often the Redis copy is checked against its marker (with `durable`). */
const COPY_CHECK_MS = 1000
/** How far back (ms) the poll of the durable store looks beyond its interval: clock skew between writers. */
const POLL_OVERLAP_MS = 60_000

export type AnnouncedChange = Extract<RevocationChange, { op: 'add' | 'remove' }>

/** Mirror states: 'off' asks Redis, 'syncing' loads the list (and still asks Redis), 'on' answers locally. */
export type MirrorState = 'off' | 'syncing' | 'on'

export function isChange(value: unknown): value is RevocationChange {
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
export class Mirror {
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
      throw SETUP.TRV_AUTH_MIRROR_CHANNEL()
    }
    for (const method of ['evalsha', 'eval', 'scan', 'pttl', 'publish'] as const) {
      if (typeof client[method] !== 'function') {
        throw SETUP.TRV_AUTH_MIRROR_CLIENT(method)
      }
    }
    // The scripts publish on `client`: the channel must be on the same Redis, sharded on a Cluster.
    if (isCluster(client) !== (channel.sharded === true)) {
      throw SETUP.TRV_AUTH_MIRROR_SAME_REDIS(isCluster(client))
    }
    for (const method of ['spublish', 'cluster'] as const) {
      if (isCluster(client) && typeof client[method] !== 'function') {
        throw SETUP.TRV_AUTH_MIRROR_CLUSTER(method)
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
        throw SETUP.TRV_AUTH_MIRROR_TIMING(name)
      }
    }
    if (this.maxSilenceMs < this.heartbeatMs) {
      throw SETUP.TRV_AUTH_MIRROR_SILENCE()
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
    return this.entries.has(jti, Date.now)
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
  /** With `durable`: the Redis copy checked against its marker and rewritten when lost (revocation-reconciliation.ts). */
  private async checkCopy(): Promise<void> {
    const durable = this.store.durable
    if (durable === undefined || this.checkingCopy || this.closed) return
    this.checkingCopy = true
    try {
      await reconcileRedisCopy(this.client, this.store.keyPrefix, durable, (command) =>
        this.store.run(command),
      )
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
    return scanList(this.client, this.store.keyPrefix, (command) => this.store.run(command))
  }
}
