// Flow control of one connection's calls: the request ids in flight, the handlers still running (what
// `maxInFlight` bounds), a call's release at its answer, and the wait for the last one at close or shutdown.

import type { TriviumCall } from '@trivium/core'
import { handlerSettled } from '@trivium/core/internal'
import type { Cancellation } from '@trivium/wire'

export class CallTable {
  /** Calls by request id; an id leaves at its answer or the moment its CANCEL is read. */
  readonly inFlight = new Map<number, Cancellation>()
  /** Handlers still running, cancelled ones included: `maxInFlight` bounds this. */
  running = 0
  /** Told when `running` comes back to 0 (a close or shutdown waiting for the calls in flight). */
  #drained: (() => void) | undefined
  /** The session's part of a call's end (its client stream's inbox, the activity flag). */
  readonly #onSettled: (id: number, entry: Cancellation) => void

  constructor(onSettled: (id: number, entry: Cancellation) => void) {
    this.#onSettled = onSettled
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
    this.#onSettled(id, entry)
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
