// The demo's roles and permissions, created on start if missing (idempotent, safe on every start).
import type { RbacService } from '@trivium/rbac'

export const PERMISSIONS = [
  { name: 'tasks:read', description: 'Read tasks', resource: 'tasks', action: 'read' },
  { name: 'tasks:write', description: 'Create and edit own tasks', resource: 'tasks', action: 'write' },
  { name: 'tasks:delete', description: 'Delete tasks', resource: 'tasks', action: 'delete' },
  { name: 'admin:roles', description: 'Manage roles and permissions', resource: 'roles', action: 'manage' },
] as const

export const ROLES = {
  member: { description: 'Registered user', permissions: ['tasks:read', 'tasks:write'] },
  admin: { description: 'Everything', permissions: PERMISSIONS.map((p) => p.name) },
} as const

export type RoleName = keyof typeof ROLES

export async function ensureRights(rbac: RbacService): Promise<Record<RoleName, number>> {
  const ids = new Map<string, number>()
  for (const p of PERMISSIONS) {
    const existing = await rbac.getPermissionByName(p.name)
    const permission =
      existing ??
      (await rbac.createPermission(p.name, p.description, p.resource, p.action).catch(async (err) => {
        // Another instance created it at the same moment.
        const again = await rbac.getPermissionByName(p.name)
        if (!again) throw err
        return again
      }))
    ids.set(p.name, permission.id)
  }
  const roleIds = {} as Record<RoleName, number>
  for (const [name, role] of Object.entries(ROLES) as [RoleName, (typeof ROLES)[RoleName]][]) {
    const existing = await rbac.getRoleByName(name)
    const created =
      existing ??
      (await rbac
        .createRole(
          name,
          role.description,
          role.permissions.map((p) => permissionId(ids, p)),
        )
        .catch(async (err) => {
          const again = await rbac.getRoleByName(name)
          if (!again) throw err
          return again
        }))
    roleIds[name] = created.id
  }
  return roleIds
}

/** The id of a permission a role lists (every one is in PERMISSIONS, created above). */
function permissionId(ids: ReadonlyMap<string, number>, name: string): number {
  const id = ids.get(name)
  if (id === undefined) throw new Error(`rights.ts: a role lists ${name}, which is not in PERMISSIONS`)
  return id
}
