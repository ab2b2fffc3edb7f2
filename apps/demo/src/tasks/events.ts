// Task change events for `tasks.watch`. In one process an EventEmitter carries them; with several
// instances the same interface is backed by Redis pub/sub (see scale-out).
import { EventEmitter, on } from 'node:events'
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
  /** Events until `signal` aborts; a slow consumer gets at most `buffer` queued events, then the oldest are dropped. */
  subscribe(signal: AbortSignal): AsyncIterable<TaskEventRecord>
  close(): Promise<void>
}

export class LocalTaskEventBus implements TaskEventBus {
  private readonly emitter = new EventEmitter()

  constructor() {
    this.emitter.setMaxListeners(0)
  }

  async publish(event: TaskEventRecord): Promise<void> {
    this.emitter.emit('event', event)
  }

  async *subscribe(signal: AbortSignal): AsyncIterable<TaskEventRecord> {
    try {
      for await (const [event] of on(this.emitter, 'event', { signal })) yield event as TaskEventRecord
    } catch (err) {
      if ((err as Error).name !== 'AbortError') throw err
    }
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners()
  }
}
