// Compile-time checks (run by generator.test.ts with `tsc -p test/tsconfig.json`): generated classes
// are core Models, and registerEndpoints / createTypedClient reject wrong types.

import type { ModelClass, RuntimeClient } from '@trivium/codec/runtime'
import type { Model, Trivium } from '@trivium/core'
import { createTypedClient, endpoints } from '../generated/tasks/endpoints.js'
import { CreateTask, Tag, Task, type TaskData, TaskEvent } from '../generated/tasks/models.js'
import { registerEndpoints } from '../generated/tasks/server.js'

export const asModel: Model<Task> = Task
export const asModel2: Model<CreateTask> = CreateTask
export const asModelData: Model<TaskData> = Task
export const asClass: ModelClass<Task, TaskData> = Task
export const status: 201 = endpoints['tasks.create'].status
export const perms: readonly ['tasks:write'] = endpoints['tasks.create'].config.permissions

declare const trivium: Trivium
declare const client: RuntimeClient

registerEndpoints(trivium, {
  'tasks.create': (req) => ({ id: 1n, title: req.title, done: false, tags: [...req.tags] }),
  'tasks.get': async (req) =>
    new Task({ id: req.id, title: '', done: false, tags: [], owner: new Tag({ name: 'x' }) }),
  'tasks.watch': async function* (req) {
    yield new TaskEvent({
      kind: 'k',
      task: new Task({ id: BigInt(req.limit), title: '', done: false, tags: [] }),
    })
  },
  health: () => ({}),
})

registerEndpoints(trivium, {
  // @ts-expect-error id must be a bigint
  'tasks.create': (req) => ({ id: 1, title: req.title, done: false, tags: [] }),
  // @ts-expect-error the request of tasks.get has no title
  'tasks.get': (req) => ({ id: req.id, title: req.title, done: false, tags: [] }),
  // @ts-expect-error a streaming handler must return an AsyncIterable
  'tasks.watch': () => ({ kind: 'k' }),
  health: () => ({}),
})

// @ts-expect-error every endpoint needs a handler
registerEndpoints(trivium, { health: () => ({}) })

const typed = createTypedClient(client)
export const created: Promise<Task> = typed.tasks.create({ title: 'x', tags: [] })
export const events: AsyncIterable<TaskEvent> = typed.tasks.watch({ limit: 1 })
// @ts-expect-error title must be a string
typed.tasks.create({ title: 1, tags: [] })
