// tasks.* endpoints. Reading needs `tasks:read`; writing `tasks:write` and, for update, ownership
// unless the user is an admin; deleting `tasks:delete` (admins hold it). Deleting and changing another
// user's task are checked against the user's current rights (live), never the token's snapshot: a
// revoked admin role stops them at once (demo README "Rights"). Changes are published to `tasks.watch`
// subscribers: the repository stores each change's event with it (tasks/outbox.ts) and the relay
// publishes it, so a write that committed is answered as a success whatever Redis does.
import { ForbiddenException, TriviumError, ValidationException } from '@trivium/core'
import { validateFileContent, validateFileExtension, validateFileSize } from '@trivium/validation'
import type { CreateTask, ImportSummaryData, SyncChangeData, SyncEdit } from '../generated/models.js'
import type { EndpointHandlers } from '../generated/server.js'
import type { TaskEventBus, TaskEventRecord } from '../tasks/events.js'
import type { TaskChanges, TaskRecord, TaskRepository, WriteStop } from '../tasks/repository.js'
import { type HandlerContext, userOf } from './context.js'
import { refuseNulIn } from './text-rule.js'

/** Errors listed in an import's summary (the count covers them all). */
const MAX_IMPORT_ERRORS = 20

type TaskHandlers = Pick<
  EndpointHandlers,
  | 'tasks.list'
  | 'tasks.get'
  | 'tasks.create'
  | 'tasks.update'
  | 'tasks.delete'
  | 'tasks.watch'
  | 'tasks.import'
  | 'tasks.sync'
  | 'files.upload'
>

export function taskHandlers({ tasks, events, rbac }: HandlerContext): TaskHandlers {
  /** The owner of a task, or an admin (checked live), may change it. */
  async function updateTask(
    userId: number,
    id: number,
    changes: TaskChanges,
    stop: WriteStop,
  ): Promise<TaskRecord> {
    const existing = await tasks.get(id, stop.signal)
    if (existing.ownerId !== userId && !(await rbac.liveRights(userId)).roles.includes('admin')) {
      throw new ForbiddenException('Only the owner of a task or an admin can change it')
    }
    return tasks.update(id, changes, stop)
  }

  return {
    // Reads and writes stop with the call (its deadline, a cancel, the client leaving): a write whose
    // deadline passed before its COMMIT rolls back (PROTOCOL.md "Deadlines").
    'tasks.list': (req, call) => tasks.list(req, call.signal),
    'tasks.get': (req, call) => tasks.get(req.id, call.signal),
    'tasks.create': (req, call) => tasks.create(userOf(call).id, req, call),
    'tasks.update': (req, call) => updateTask(userOf(call).id, req.id, req, call),
    'tasks.delete': async (req, call) => {
      await tasks.delete(req.id, call)
      return { ok: true }
    },
    'tasks.watch': (_req, call) => events.subscribe(call.signal),
    'tasks.import': (items, call) => importTasks(tasks, userOf(call).id, items, call),
    'tasks.sync': (edits, call) =>
      syncTasks(events, edits, call.signal, (edit) => updateTask(userOf(call).id, edit.id, edit, call)),
    'files.upload': async (req, call) => {
      validateFileExtension(req.filename)
      validateFileSize(req.data.byteLength, 'data')
      validateFileContent(req.data, 'data')
      return tasks.storeFile(userOf(call).id, req, call)
    },
  }
}

/**
 * `tasks.import`: one task per item, each written with its event as `tasks.create` writes it. An item
 * the model or the service refuses is counted and listed (its index and message) and the import goes on;
 * the items arrive as the client sends them, at the pace the database takes them (PROTOCOL.md "Client and
 * bidirectional streams": credit).
 */
async function importTasks(
  tasks: TaskRepository,
  ownerId: number,
  items: AsyncIterable<CreateTask>,
  stop: WriteStop,
): Promise<ImportSummaryData> {
  let failed = 0
  const taskIds: number[] = []
  const errors: { index: number; message: string }[] = []
  const iterator = items[Symbol.asyncIterator]()
  for (let index = 0; ; index++) {
    let item: CreateTask
    try {
      const next = await iterator.next()
      if (next.done) break
      item = next.value
      refuseNulIn('CreateTask', item)
      taskIds.push((await tasks.create(ownerId, item, stop)).id)
    } catch (err) {
      // A refused item (its model, the NUL rule, the service's checks) is reported; anything else ends the import.
      if (!(err instanceof ValidationException)) throw err
      failed++
      if (errors.length < MAX_IMPORT_ERRORS) errors.push({ index, message: err.message })
    }
  }
  return { created: taskIds.length, failed, taskIds, errors }
}

/**
 * `tasks.sync`: each edit is applied as `tasks.update` (owner or admin) and answered with the stored task
 * (`source: "you"`, its `ref`) or `rejected` with the error; meanwhile every change made elsewhere comes out
 * as `source: "other"` (the `tasks.watch` events, without the ones this stream's own edits caused). Ends
 * when the client half-closes, after the answer to its last edit.
 */
/**
 * A sync stream's `source: "other"` changes: every event but those its own edits caused. An event that
 * comes while an edit is being applied waits for the edit's answer (only then is its stamp known, and
 * the event of a committed edit can come first), then passes or is dropped.
 */
function ownEditsLeftOut(pass: (event: TaskEventRecord) => void) {
  const own = new Set<string>()
  let held: TaskEventRecord[] | undefined
  const stamp = (task: TaskRecord) => `${task.id}@${new Date(task.updatedAt).getTime()}`
  const check = (event: TaskEventRecord) => {
    if (!own.delete(stamp(event.task))) pass(event)
  }
  return {
    event(event: TaskEventRecord): void {
      if (held !== undefined) held.push(event)
      else check(event)
    },
    hold(): void {
      held ??= []
    },
    mine(task: TaskRecord): void {
      if (own.size >= 1000) own.clear() // events of our own edits that never came: forget them
      own.add(stamp(task))
    },
    release(): void {
      const waiting = held
      held = undefined
      for (const event of waiting ?? []) check(event)
    },
  }
}

async function* syncTasks(
  events: TaskEventBus,
  edits: AsyncIterable<SyncEdit>,
  signal: AbortSignal,
  apply: (edit: SyncEdit) => Promise<TaskRecord>,
): AsyncIterable<SyncChangeData> {
  const queue: SyncChangeData[] = []
  let wake: (() => void) | undefined
  let finished = false
  let failure: { error: unknown } | undefined
  const push = (change: SyncChangeData) => {
    queue.push(change)
    wake?.()
  }
  const stop = new AbortController()
  const others = ownEditsLeftOut((event) =>
    push({ source: 'other', kind: event.kind, task: event.task, at: event.at }),
  )
  const watching = (async () => {
    for await (const event of events.subscribe(AbortSignal.any([signal, stop.signal]))) others.event(event)
  })()
  watching.catch(() => {})
  const mine = (async () => {
    for await (const edit of edits) {
      refuseNulIn('SyncEdit', edit)
      others.hold()
      try {
        const task = await apply(edit)
        others.mine(task)
        push({ source: 'you', ref: edit.ref, kind: 'updated', task, at: new Date() })
      } catch (err) {
        // Refused edits are answered and the stream goes on; a server fault ends it.
        if (!(err instanceof TriviumError) || err.statusCode >= 500) throw err
        push({
          source: 'you',
          ref: edit.ref,
          kind: 'rejected',
          error: { code: err.code, message: err.message },
          at: new Date(),
        })
      } finally {
        others.release()
      }
    }
  })()
  mine.then(
    () => {
      finished = true
      wake?.()
    },
    (error) => {
      failure = { error }
      wake?.()
    },
  )
  try {
    for (;;) {
      const change = queue.shift()
      if (change !== undefined) {
        yield change
        continue
      }
      if (failure) throw failure.error
      if (finished) return
      await new Promise<void>((resolve) => {
        wake = resolve
      })
      wake = undefined
    }
  } finally {
    stop.abort()
  }
}
