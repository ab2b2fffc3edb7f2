// admin.* endpoints (role `admin`): roles, permissions and assignments through @trivium/rbac.
import { NotFoundException, ValidationException } from '@trivium/core'
import type { EndpointHandlers } from '../generated/server.js'
import { type HandlerContext, userOf } from './context.js'

type AdminHandlers = Pick<
  EndpointHandlers,
  'admin.roles.create' | 'admin.roles.assign' | 'admin.roles.revoke' | 'admin.permissions.create'
>

export function adminHandlers({ rbac, userExists }: HandlerContext): AdminHandlers {
  // Roles are given to and taken from registered users only (the demo's migration adds the foreign
  // key that makes the database refuse it too).
  async function knownUser(userId: number): Promise<void> {
    if (userId < 1) {
      const message = 'userId must be a positive integer'
      throw new ValidationException(message, [{ field: 'userId', message }])
    }
    if (!(await userExists(userId))) throw new NotFoundException(`User ${userId} not found`)
  }

  return {
    // Each write takes the call: one whose deadline passed before its COMMIT writes nothing (PROTOCOL.md
    // "Deadlines").
    'admin.roles.create': async (req, call) => {
      const role = await rbac.createRole(req.name, req.description, [...req.permissionIds], call)
      return {
        id: role.id,
        name: role.name,
        description: role.description,
        createdAt: new Date(role.created_at),
      }
    },
    'admin.roles.assign': async (req, call) => {
      await knownUser(req.userId)
      await rbac.assignRole(req.userId, req.roleId, userOf(call).id, call)
      return { ok: true }
    },
    'admin.roles.revoke': async (req, call) => {
      await knownUser(req.userId)
      await rbac.revokeRole(req.userId, req.roleId, userOf(call).id, call)
      return { ok: true }
    },
    'admin.permissions.create': async (req, call) => {
      const p = await rbac.createPermission(req.name, req.description, req.resource, req.action, call)
      return {
        id: p.id,
        name: p.name,
        description: p.description,
        resource: p.resource,
        action: p.action,
        createdAt: new Date(p.created_at),
      }
    },
  }
}
