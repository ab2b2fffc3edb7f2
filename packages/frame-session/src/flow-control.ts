// Flow control of one connection's calls: the request ids in flight, the handlers still running (what
// `maxInFlight` bounds), a call's release at its answer, and the wait for the last one at close or shutdown.

import type { TriviumCall } from '@trivium/core'
import { handlerSettled } from '@trivium/core/internal'
import type { Cancellation } from '@trivium/wire'
import { ClientStreams } from './client-streams.js'

/**
 * Calls by request id. Most connections have none or one call in flight: that one is kept in two fields,
 * and a Map is made only while two or more are (an idle connection holds no table: bench/density).
 */
export class CallIds {
  #id = 0
  #entry: Cancellation | undefined = undefined
  #more: Map<number, Cancellation> | undefined = undefined

  get size(): number {
    return this.#more !== undefined ? this.#more.size : this.#entry === undefined ? 0 : 1
  }

  get(id: number): Cancellation | undefined {
    if (this.#more !== undefined) return this.#more.get(id)
    return this.#id === id ? this.#entry : undefined
  }

  has(id: number): boolean {
    return this.get(id) !== undefined
  }

  set(id: number, entry: Cancellation): void {
    if (this.#more === undefined) {
      if (this.#entry === undefined || this.#id === id) {
        this.#id = id
        this.#entry = entry
        return
      }
      this.#more = new Map([[this.#id, this.#entry]])
      this.#entry = undefined
    }
    this.#more.set(id, entry)
  }

  delete(id: number): boolean {
    const more = this.#more
    if (more !== undefined) {
      const deleted = more.delete(id)
      if (more.size === 0) this.#more = undefined
      return deleted
    }
    if (this.#entry === undefined || this.#id !== id) return false
    this.#entry = undefined
    return true
  }

  /** The calls in flight (a copy: aborting one may take it out of the table). */
  values(): Cancellation[] {
    if (this.#more !== undefined) return [...this.#more.values()]
    return this.#entry === undefined ? [] : [this.#entry]
  }

  clear(): void {
    this.#more = undefined
    this.#entry = undefined
  }
}

/** A connection's calls: the table of ids is this object itself (one object per session, not two). */
export class CallTable extends CallIds {
  /** Handlers still running, cancelled ones included: `maxInFlight` bounds this. */
  running = 0
  /** Told when `running` comes back to 0 (a close or shutdown waiting for the calls in flight). */
  #drained: (() => void) | undefined
  /** The connection's activity flag, set at every call's end (the session: its `touch()`). */
  readonly #owner: { touch(): void }
  /** Open client and bidirectional streams (client-streams.ts), made at the first CLIENT_* frame or stream. */
  streams: ClientStreams | undefined = undefined

  constructor(owner: { touch(): void }) {
    super()
    this.#owner = owner
  }

  get clientStreams(): ClientStreams {
    this.streams ??= new ClientStreams()
    return this.streams
  }

  /** Calls by request id; an id leaves at its answer or the moment its CANCEL is read. */
  get inFlight(): CallIds {
    return this
  }

  /** A call admitted: its id is taken and its handler counts as running. */
  start(id: number, entry: Cancellation): void {
    this.inFlight.set(id, entry)
    this.running++
  }

  /** Takes the id out of the table when it is still this call's (a CANCEL may have given it to a new call). */
  forget(id: number, entry: Cancellation): void {
    if (this.inFlight.get(id) === entry) this.inFlight.delete(id)
  }

  /** Aborts the streams in flight (client streams included) with `reason`; unary calls run on. */
  abortStreams(reason: unknown): void {
    for (const entry of this.inFlight.values()) if (entry.streaming) entry.abort(reason)
  }

  /** Aborts every call and empties the table (the connection is gone). */
  abortAll(reason: unknown): void {
    for (const entry of this.inFlight.values()) entry.abort(reason)
    this.inFlight.clear()
  }

  /**
   * A call is answered: settled now, or — answered at its deadline while its handler runs on — its id is
   * free now and it counts toward maxInFlight until the handler returns (as a cancelled one does).
   */
  release(id: number, entry: Cancellation, call: TriviumCall | undefined): void {
    const running = call === undefined ? undefined : handlerSettled(call)
    if (running === undefined) {
      this.settle(id, entry)
      return
    }
    this.forget(id, entry)
    entry.abort(new Error('deadline exceeded'))
    void running.then(() => this.settle(id, entry))
  }

  /** A call is over: its id is free again, and a drain waiting for the last call is told. */
  settle(id: number, entry: Cancellation): void {
    // The call's client stream (if any) closes, and the connection was active.
    this.streams?.settle(id, entry)
    this.#owner.touch()
    // A CANCEL may have freed the id and a new call taken it: only remove this call's own entry.
    // Only an aborted entry can have left the map (CANCEL, close), so the lookup is for those.
    if (!entry.aborted || this.inFlight.get(id) === entry) this.inFlight.delete(id)
    this.running--
    if (this.running === 0) this.#drained?.()
  }

  /**
   * Calls `then` once no handler runs, or after `graceMs`, whichever comes first (at once when none runs).
   * `holdProcess`: the grace timer keeps the process alive (shutdown), else it is unref'd (a session close).
   */
  afterDrain(graceMs: number, holdProcess: boolean, then: () => void): void {
    if (this.running === 0) {
      then()
      return
    }
    const timer = setTimeout(then, graceMs)
    if (!holdProcess) timer.unref()
    this.#drained = () => {
      clearTimeout(timer)
      then()
    }
  }

  /** The connection closed: a drain still waiting is told now. */
  closed(): void {
    this.#drained?.()
  }
}
