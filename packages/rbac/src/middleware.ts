// Authorization middleware (README "Authorization rules"), the same on every transport.
//   - no `call.identity` (not authenticated) → passes unchecked (authentication must run first: the
//     middleware is registered as `rbac` with `after: ['auth']`, checked at ready());
//   - required permissions: any-of, else ForbiddenException `Insufficient permissions. Required: a, b`;
//   - required roles: any-of, else ForbiddenException `Insufficient roles. Required: a, b`;
//   - both lists present → both must pass (permissions are checked first).
// Requirements come from the endpoint's registration (`permissions`, `roles`) unless the plugin's
// option maps name the endpoint, which then replace the declaration.
import {
  type CallTarget,
  directMiddleware,
  ForbiddenException,
  type Middleware,
  type TriviumCall,
} from '@trivium/core'
import { enforcesSettings } from '@trivium/core/internal'
import type { RbacService } from './service.js'
import { SETUP } from './setup-errors.js'

declare module '@trivium/core' {
  interface TriviumEndpointConfig {
    /** Any-of: the caller needs at least one of these permissions. */
    permissions?: string[]
    /** Any-of: the caller needs at least one of these roles. */
    roles?: string[]
    /**
     * Check the user's current roles/permissions in the database (cached briefly) instead of the
     * snapshot carried by the token, so a revoked role stops working before the token expires.
     */
    liveRbac?: boolean
  }
}

/** The separator of the `Required:` list ("comma-separated", README "Authorization rules"). */
export const REQUIRED_SEPARATOR = ', '

export function insufficientPermissions(required: readonly string[]): Error {
  return new ForbiddenException(`Insufficient permissions. Required: ${required.join(REQUIRED_SEPARATOR)}`)
}

export function insufficientRoles(required: readonly string[]): Error {
  return new ForbiddenException(`Insufficient roles. Required: ${required.join(REQUIRED_SEPARATOR)}`)
}

export type RequirementMap = Record<string, string[]>

export interface RbacMiddlewareOptions {
  /** endpoint name → permission names (any-of). Replaces the endpoint's own `permissions`. */
  permissions?: RequirementMap
  /** endpoint name → role names (any-of). Replaces the endpoint's own `roles`. */
  roles?: RequirementMap
  /** Endpoints checked live (in addition to those declared `liveRbac: true`). */
  live?: string[]
  /** Needed for live checks. */
  service?: RbacService
}

export interface Requirements {
  permissions: string[]
  roles: string[]
  live: boolean
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
}

/** The map's own entry for an endpoint (never one inherited from Object.prototype, e.g. `constructor`). */
function listed(map: RequirementMap, endpoint: string): string[] | undefined {
  return Object.hasOwn(map, endpoint) ? map[endpoint] : undefined
}

/** Checks a requirement map's shape; messages name the option. */
export function checkRequirementMap(value: unknown, option: string): RequirementMap {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw SETUP.TRV_RBAC_REQUIREMENT_MAP(option)
  }
  // A copy with own entries only (fromEntries defines even a `__proto__` key as an own entry).
  return Object.fromEntries(
    Object.entries(value).map(([endpoint, list]) => {
      if (!isNameList(list)) {
        throw SETUP.TRV_RBAC_REQUIREMENT_LIST(option, endpoint)
      }
      return [endpoint, list]
    }),
  )
}

function isNameList(list: unknown): list is string[] {
  return Array.isArray(list) && list.every((n) => typeof n === 'string' && n !== '')
}

export function checkEndpointConfig(
  name: string,
  config: { permissions?: unknown; roles?: unknown; liveRbac?: unknown },
) {
  for (const key of ['permissions', 'roles'] as const) {
    const list = config[key]
    if (list !== undefined && (!Array.isArray(list) || list.some((n) => typeof n !== 'string' || n === ''))) {
      throw SETUP.TRV_RBAC_ENDPOINT_LIST(name, key)
    }
  }
  if (config.liveRbac !== undefined && typeof config.liveRbac !== 'boolean') {
    throw SETUP.TRV_RBAC_ENDPOINT_LIVE(name)
  }
}

function userIdOf(call: TriviumCall<unknown, CallTarget>): number | undefined {
  const raw = call.identity?.userId
  const id = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
  return typeof id === 'number' && Number.isInteger(id) && id > 0 && id <= 2147483647 ? id : undefined
}

export function createRbacMiddleware(options: RbacMiddlewareOptions = {}): Middleware {
  const permissionMap = checkRequirementMap(options.permissions, 'permissions')
  const roleMap = checkRequirementMap(options.roles, 'roles')
  const liveSet = new Set(options.live ?? [])
  const service = options.service
  // Requirements per endpoint, computed on first use (definitions are immutable after start).
  const cache = new Map<string, Requirements>()

  function requirementsOf(call: TriviumCall<unknown, CallTarget>): Requirements {
    let req = cache.get(call.endpoint)
    if (req === undefined) {
      const config = call.definition.config
      req = {
        permissions: [...(listed(permissionMap, call.endpoint) ?? stringList(config.permissions))],
        roles: [...(listed(roleMap, call.endpoint) ?? stringList(config.roles))],
        live: config.liveRbac === true || liveSet.has(call.endpoint),
      }
      cache.set(call.endpoint, req)
    }
    return req
  }

  // Not an async function: the token-snapshot check is synchronous, so an allowed call goes on without
  // an extra promise and microtask. Errors still come back as a rejected promise.
  return enforcesSettings(['permissions', 'roles', 'liveRbac'], directMiddleware(rbac))
  function rbac(call: TriviumCall<unknown, CallTarget>, next: () => Promise<unknown>): Promise<unknown> {
    try {
      const identity = call.identity
      if (identity === undefined) return next()
      const req = requirementsOf(call)
      if (req.permissions.length === 0 && req.roles.length === 0) return next()
      if (req.live && service) {
        const userId = userIdOf(call)
        if (userId === undefined) return check(req, EMPTY_RIGHTS, next)
        return service.liveRights(userId).then((rights) => check(req, rights, next))
      }
      // The token's claims are read in place: no copy of the roles and permissions per request.
      return check(req, identity, next)
    } catch (err) {
      return Promise.reject(err)
    }
  }
}

/** What a check reads: the identity's snapshot, or the database's current rights. */
interface Rights {
  readonly roles: readonly string[]
  readonly permissions: readonly string[]
}

/** No roles, no permissions (a live check without a usable user id). */
const EMPTY_RIGHTS: Rights = Object.freeze({ roles: [], permissions: [] })

/** True when `list` (the token's or the database's names) holds one of `wanted`. */
function holdsAny(list: readonly string[], wanted: readonly string[]): boolean {
  for (let i = 0; i < wanted.length; i++) {
    const name = wanted[i]
    for (let j = 0; j < list.length; j++) if (list[j] === name) return true
  }
  return false
}

function check(req: Requirements, rights: Rights, next: () => Promise<unknown>): Promise<unknown> {
  if (req.permissions.length > 0 && !holdsAny(rights.permissions, req.permissions)) {
    throw insufficientPermissions(req.permissions)
  }
  if (req.roles.length > 0 && !holdsAny(rights.roles, req.roles)) {
    throw insufficientRoles(req.roles)
  }
  return next()
}
