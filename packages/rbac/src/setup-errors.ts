// @trivium/rbac's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/rbac', {
  TRV_RBAC_SQL_REQUIRED: {
    when: 'the plugin is registered without `sql`',
    message: () => 'the sql option (a SqlClient from @trivium/sql) is required',
  },
  TRV_RBAC_SQL: {
    when: '`sql` (plugin or `new RbacService`) is not a SqlClient (no `query` and `transaction`)',
    message: () => 'sql must be a SqlClient from @trivium/sql',
  },
  TRV_RBAC_REQUIREMENT_MAP: {
    when: '`permissions` or `roles` is not an object mapping endpoint names to lists of names',
    message: (option: string) => `${option} must be an object mapping endpoint names to lists of names`,
  },
  TRV_RBAC_REQUIREMENT_LIST: {
    when: 'an entry of `permissions` or `roles` is not a list of non-empty strings',
    message: (option: string, endpoint: string) =>
      `${option}["${endpoint}"] must be a list of non-empty strings`,
  },
  TRV_RBAC_LIVE: {
    when: '`live` is not a list of endpoint names',
    message: () => 'live must be a list of endpoint names',
  },
  TRV_RBAC_MIGRATE: {
    when: '`migrate` is not a boolean',
    message: () => 'migrate must be a boolean',
  },
  TRV_RBAC_USERS_TABLE: {
    when: '`usersTable` is not a lower-case SQL identifier',
    message: () => 'usersTable must be a lower-case SQL identifier (e.g. "auth_users")',
  },
  TRV_RBAC_LIVE_CACHE_TTL: {
    when: '`liveCacheTtlMs` is not an integer >= 0',
    message: () => 'liveCacheTtlMs must be an integer >= 0 (ms)',
  },
  TRV_RBAC_LIVE_CACHE_MAX: {
    when: '`liveCacheMax` is not a positive integer',
    message: () => 'liveCacheMax must be a positive integer',
  },
  TRV_RBAC_USER_EXISTS: {
    when: '`userExists` is not a function',
    message: () => 'userExists must be a function',
  },
  TRV_RBAC_ENDPOINT_LIST: {
    when: "an endpoint's `permissions` or `roles` is not a list of non-empty strings (checked at `ready()`)",
    message: (name: string, key: string) => `endpoint "${name}": ${key} must be a list of non-empty strings`,
  },
  TRV_RBAC_ENDPOINT_LIVE: {
    when: "an endpoint's `liveRbac` is not a boolean (checked at `ready()`)",
    message: (name: string) => `endpoint "${name}": liveRbac must be a boolean`,
  },
  TRV_RBAC_OUTSIDE_CONTEXT: {
    when: "an endpoint named in the plugin's options is registered outside the context the plugin was registered in (checked at `ready()`)",
    message: (name: string) =>
      `endpoint "${name}" is named in this plugin's options, but it is registered outside the context @trivium/rbac was registered in: register @trivium/rbac in that context or an ancestor`,
  },
})
