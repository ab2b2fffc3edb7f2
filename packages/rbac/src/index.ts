// @trivium/rbac — the Fastify plugin. Runs the RBAC migrations, decorates `fastify.rbac` (the
// service) and adds the authorization middleware to the app-wide chain as `rbac`, after `auth`.
import { checkEndpointNames, optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { SqlClient } from '@trivium/sql'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import {
  checkEndpointConfig,
  checkRequirementMap,
  createRbacMiddleware,
  type RequirementMap,
} from './middleware.js'
import { migrateRbac, RbacService, type RbacServiceOptions, referenceUsers } from './service.js'
import { SETUP } from './setup-errors.js'

export { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH } from './errors.js'
export {
  createRbacMiddleware,
  type RbacMiddlewareOptions,
  REQUIRED_SEPARATOR,
  type RequirementMap,
  type Requirements,
} from './middleware.js'
export { RBAC_COMPONENT, RBAC_MIGRATIONS } from './migrations.js'
export {
  DEFAULT_LIVE_CACHE_MAX,
  DEFAULT_LIVE_CACHE_TTL_MS,
  migrateRbac,
  type Permission,
  RbacService,
  type RbacServiceOptions,
  type Role,
  referenceUsers,
  type UserRights,
  type UserRoleAssignment,
  type WriteStop,
} from './service.js'

export interface TriviumRbacOptions extends RbacServiceOptions {
  /** The database (from `connectPostgres` or `connectPglite`); the plugin does not close it. */
  sql: SqlClient
  /** endpoint name → required permissions (any-of); replaces the endpoint's own declaration. */
  permissions?: RequirementMap
  /** endpoint name → required roles (any-of); replaces the endpoint's own declaration. */
  roles?: RequirementMap
  /** Endpoints whose checks read current rights from the database (as `liveRbac: true`). */
  live?: string[]
  /** Run the RBAC migrations at registration (default true). */
  migrate?: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    rbac: RbacService
  }
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const RBAC_OPTIONS = optionNames<TriviumRbacOptions>()(
  'sql',
  'permissions',
  'roles',
  'live',
  'migrate',
  'liveCacheTtlMs',
  'liveCacheMax',
  'userExists',
  'usersTable',
)

const triviumRbacPlugin: FastifyPluginAsync<TriviumRbacOptions> = async (
  fastify: FastifyInstance,
  options,
) => {
  if (typeof options !== 'object' || options === null || options.sql === undefined) {
    throw SETUP.TRV_RBAC_SQL_REQUIRED()
  }
  refuseUnknownOptions('@trivium/rbac', options, RBAC_OPTIONS)
  const permissions = checkRequirementMap(options.permissions, 'permissions')
  const roles = checkRequirementMap(options.roles, 'roles')
  const live = options.live ?? []
  if (!Array.isArray(live) || live.some((n) => typeof n !== 'string')) {
    throw SETUP.TRV_RBAC_LIVE()
  }
  const migrate = options.migrate ?? true
  if (typeof migrate !== 'boolean') throw SETUP.TRV_RBAC_MIGRATE()

  const service = new RbacService(options.sql, options)
  if (migrate) await migrateRbac(options.sql)
  // Users live in another package's table: reference it so the database refuses unknown ids too.
  if (migrate && options.usersTable !== undefined) await referenceUsers(options.sql, options.usersTable)
  fastify.decorate('rbac', service)
  fastify.trivium.use(createRbacMiddleware({ permissions, roles, live, service }), {
    name: 'rbac',
    after: ['auth'],
  })

  // A map entry or live entry naming an endpoint that does not exist is a typo that would silently
  // leave the real endpoint unprotected: fail at start-up.
  fastify.addHook('onReady', async () => {
    const registry = fastify.trivium.registry
    checkEndpointNames(registry, '@trivium/rbac', 'permissions', Object.keys(permissions))
    checkEndpointNames(registry, '@trivium/rbac', 'roles', Object.keys(roles))
    checkEndpointNames(registry, '@trivium/rbac', 'live', live)
    for (const def of registry.list()) checkEndpointConfig(def.name, def.config)
    // A map entry is a rule too: it holds only where this plugin's middleware runs.
    for (const name of new Set([...Object.keys(permissions), ...Object.keys(roles), ...live])) {
      const def = registry.get(name)
      if (def !== undefined && !fastify.trivium.pipeline.enforcedFor(def).has('permissions')) {
        throw SETUP.TRV_RBAC_OUTSIDE_CONTEXT(name)
      }
    }
  })
}

export const triviumRbac = fp(triviumRbacPlugin, {
  fastify: '^5.12.1',
  name: '@trivium/rbac',
  dependencies: ['@trivium/core'],
})
export default triviumRbac
