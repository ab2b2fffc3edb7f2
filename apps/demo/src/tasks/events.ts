// Task change events for `tasks.watch`. In one process a set of subscribers carries them; with several
// instances the same interface is backed by Redis pub/sub (see scale-out).

import { EventQueue, MAX_PENDING_EVENTS } from './event-queue.js'
import type { TaskRecord } from './repository.js'

export type TaskEventKind = 'created' | 'updated' | 'deleted'

export interface TaskEventRecord {
  /** The outbox row's id: unique per event, repeated only when an event is delivered twice. */
  id?: string
  kind: TaskEventKind
  task: TaskRecord
  at: Date
}

export interface TaskEventBus {
  publish(event: TaskEventRecord): Promise<void>
  /** Events published from the first `next()` until `signal` aborts or the iteration is returned. */
  subscribe(signal: AbortSignal): AsyncIterable<TaskEventRecord>
  close(): Promise<void>
}

export class LocalTaskEventBus implements TaskEventBus {
  /**
   * One small queue per subscriber (not `events.on()`, whose async iterator held ~36 KiB per
   * subscription on Node 20: bench/fanout). Each event is frozen and the same object reaches every
   * subscriber, so frame sessions encode it once per format for all of them (@trivium/frame-session).
   */
  private readonly subscribers = new Set<EventQueue<TaskEventRecord>>()

  /** `maxPending`: events a subscriber may have waiting before its stream ends (event-queue.ts). */
  constructor(private readonly maxPending = MAX_PENDING_EVENTS) {}

  async publish(event: TaskEventRecord): Promise<void> {
    const shared = freezeEvent(event)
    // One iterator result for all of them too: a subscriber's pending `next()` resolves with it.
    const step: IteratorYieldResult<TaskEventRecord> = Object.freeze({ done: false, value: shared })
    for (const subscriber of this.subscribers) subscriber.push(shared, step)
  }

  subscribe(signal: AbortSignal): AsyncIterable<TaskEventRecord> {
    return new EventQueue<TaskEventRecord>(this.subscribers, signal, this.maxPending)
  }

  async close(): Promise<void> {
    for (const subscriber of [...this.subscribers]) subscriber.end()
  }
}

/** The event and its task frozen: subscribers share one object and none can change it for the others. */
function freezeEvent(event: TaskEventRecord): TaskEventRecord {
  Object.freeze(event.task.tags)
  Object.freeze(event.task)
  return Object.freeze(event)
}
