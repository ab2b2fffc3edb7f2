// tasks.* endpoints. Reading needs `tasks:read`; writing `tasks:write` and, for update, ownership
// unless the user is an admin; deleting `tasks:delete` (admins hold it). Deleting and changing another
// user's task are checked against the user's current rights (live), never the token's snapshot: a
// revoked admin role stops them at once (demo README "Rights"). Changes are published to `tasks.watch`
// subscribers: the repository stores each change's event with it (tasks/outbox.ts) and the relay
// publishes it, so a write that committed is answered as a success whatever Redis does.
import { ForbiddenException } from '@trivium/core'
import { validateFileContent, validateFileExtension, validateFileSize } from '@trivium/validation'
import type { EndpointHandlers } from '../generated/server.js'
import { type HandlerContext, userOf } from './context.js'

type TaskHandlers = Pick<
  EndpointHandlers,
  | 'tasks.list'
  | 'tasks.get'
  | 'tasks.create'
  | 'tasks.update'
  | 'tasks.delete'
  | 'tasks.watch'
  | 'files.upload'
>

export function taskHandlers({ tasks, events, rbac }: HandlerContext): TaskHandlers {
  return {
    // Reads stop with the call (its deadline, a cancel, the client leaving): PROTOCOL.md "Deadlines".
    'tasks.list': (req, call) => tasks.list(req, call.signal),
    'tasks.get': (req, call) => tasks.get(req.id, call.signal),
    'tasks.create': (req, call) => tasks.create(userOf(call).id, req),
    'tasks.update': async (req, call) => {
      const user = userOf(call)
      const existing = await tasks.get(req.id)
      if (existing.ownerId !== user.id && !(await rbac.liveRights(user.id)).roles.includes('admin')) {
        throw new ForbiddenException('Only the owner of a task or an admin can change it')
      }
      return tasks.update(req.id, req)
    },
    'tasks.delete': async (req) => {
      await tasks.delete(req.id)
      return { ok: true }
    },
    'tasks.watch': (_req, call) => events.subscribe(call.signal),
    'files.upload': async (req, call) => {
      validateFileExtension(req.filename)
      validateFileSize(req.data.byteLength, 'data')
      validateFileContent(req.data, 'data')
      return tasks.storeFile(userOf(call).id, req)
    },
  }
}
