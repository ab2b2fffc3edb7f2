// The documented role-based access control operations over a SqlClient. The same SQL runs on PostgreSQL
// and PGlite. Records use the documented field names (created_at, assigned_by, …).
import {
  isForeignKeyViolation,
  isUniqueViolation,
  runMigrations,
  type SqlClient,
  violatedConstraint,
} from '@trivium/sql'
import {
  checkDescription,
  checkId,
  checkIdList,
  checkName,
  checkOptionalId,
  invalid,
  nameTaken,
  permissionNotFound,
  roleNotFound,
  userNotFound,
} from './errors.js'
import { RBAC_COMPONENT, RBAC_MIGRATIONS } from './migrations.js'
import { SETUP } from './setup-errors.js'

export interface Role {
  id: number
  name: string
  description: string
  created_at: Date
}

export interface Permission {
  id: number
  name: string
  description: string
  resource: string
  action: string
  created_at: Date
}

/** One row per (user_id, role_id); active while revoked_at is null. */
export interface UserRoleAssignment {
  user_id: number
  role_id: number
  assigned_at: Date
  assigned_by: number | null
  revoked_at: Date | null
  revoked_by: number | null
}

/** Role and permission names of a user, as carried by access tokens. */
export interface UserRights {
  roles: string[]
  permissions: string[]
}

export interface RbacServiceOptions {
  /** How long `liveRights` keeps a user's rights in memory, in ms (default 5000; 0 = no cache). */
  liveCacheTtlMs?: number
  /** Most users kept in the live cache (default 10000; the oldest entry goes first). */
  liveCacheMax?: number
  /** Checks a user id on assignRole/revokeRole (users are owned by auth or the app): false → NotFoundException. */
  userExists?: (userId: number) => boolean | Promise<boolean>
  /**
   * The table of users (integer `id` column), e.g. `auth_users` of @trivium/auth: assignRole and
   * revokeRole answer NotFoundException for an id not in it, and `referenceUsers` makes the database
   * refuse such rows too (foreign key). Ignored when `userExists` is given.
   */
  usersTable?: string
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/
const USER_FOREIGN_KEY = 'user_roles_user_fk'

function checkUsersTable(table: unknown): string {
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
    throw SETUP.TRV_RBAC_USERS_TABLE()
  }
  return table
}

/**
 * Adds the foreign key user_roles.user_id → <usersTable>(id) once (idempotent, safe from several
 * instances). NOT VALID: rows written before it are kept as they are; every new row is checked.
 */
export async function referenceUsers(sql: SqlClient, usersTable: string): Promise<void> {
  const table = checkUsersTable(usersTable)
  await sql.exec(`DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '${USER_FOREIGN_KEY}' AND conrelid = 'user_roles'::regclass) THEN
    ALTER TABLE user_roles ADD CONSTRAINT ${USER_FOREIGN_KEY} FOREIGN KEY (user_id) REFERENCES ${table} (id) ON DELETE CASCADE NOT VALID;
  END IF;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$`)
}

export const DEFAULT_LIVE_CACHE_TTL_MS = 5000
export const DEFAULT_LIVE_CACHE_MAX = 10000

const ROLE_COLUMNS = 'r.id, r.name, r.description, r.created_at'
const PERMISSION_COLUMNS = 'p.id, p.name, p.description, p.resource, p.action, p.created_at'
const ASSIGNMENT_COLUMNS = 'user_id, role_id, assigned_at, assigned_by, revoked_at, revoked_by'

/**
 * What can still drop a write: a call whose deadline passed or that was cancelled (`TriviumCall` is one).
 * Checked before the write and as the last step before its COMMIT, so a call answered 504 wrote nothing
 * (PROTOCOL.md "Deadlines").
 */
export interface WriteStop {
  throwIfAborted(): void
}

/** Creates the RBAC tables (idempotent, safe with several instances starting at once). */
export function migrateRbac(sql: SqlClient): Promise<void> {
  return runMigrations(sql, RBAC_COMPONENT, RBAC_MIGRATIONS)
}

export class RbacService {
  readonly sql: SqlClient
  readonly liveCacheTtlMs: number
  private readonly liveCacheMax: number
  private readonly userExists: RbacServiceOptions['userExists']
  private readonly live = new Map<number, { expires: number; rights: Promise<UserRights> }>()

  constructor(sql: SqlClient, options: RbacServiceOptions = {}) {
    if (typeof sql?.query !== 'function' || typeof sql.transaction !== 'function') {
      throw SETUP.TRV_RBAC_SQL()
    }
    const ttl = options.liveCacheTtlMs ?? DEFAULT_LIVE_CACHE_TTL_MS
    if (!Number.isInteger(ttl) || ttl < 0) throw SETUP.TRV_RBAC_LIVE_CACHE_TTL()
    const max = options.liveCacheMax ?? DEFAULT_LIVE_CACHE_MAX
    if (!Number.isInteger(max) || max < 1) throw SETUP.TRV_RBAC_LIVE_CACHE_MAX()
    if (options.userExists !== undefined && typeof options.userExists !== 'function') {
      throw SETUP.TRV_RBAC_USER_EXISTS()
    }
    this.sql = sql
    this.liveCacheTtlMs = ttl
    this.liveCacheMax = max
    this.userExists = options.userExists
    if (this.userExists === undefined && options.usersTable !== undefined) {
      const table = checkUsersTable(options.usersTable)
      this.userExists = async (userId) =>
        (await sql.query(`SELECT 1 FROM ${table} WHERE id = $1`, [userId])).rows.length > 0
    }
  }

  // ── reads ────────────────────────────────────────────────────────────────────────────────────

  /** Active roles of the user (revoked_at null), by name. */
  async getUserRoles(userId: number): Promise<Role[]> {
    checkId(userId, 'userId')
    const { rows } = await this.sql.query<Role>(
      `SELECT ${ROLE_COLUMNS} FROM user_roles ur JOIN roles r ON r.id = ur.role_id
       WHERE ur.user_id = $1 AND ur.revoked_at IS NULL ORDER BY r.name`,
      [userId],
    )
    return rows
  }

  /** Permissions linked to the role, by name. An unknown role is NotFoundException. */
  async getRolePermissions(roleId: number): Promise<Permission[]> {
    checkId(roleId, 'roleId')
    const { rows } = await this.sql.query<Permission & { role_exists: boolean }>(
      `SELECT ${PERMISSION_COLUMNS} FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id
       WHERE rp.role_id = $1 ORDER BY p.name`,
      [roleId],
    )
    if (rows.length === 0 && !(await this.roleExists(roleId))) throw roleNotFound(roleId)
    return rows
  }

  /** Distinct permissions through the user's active roles, by name. */
  async getUserPermissions(userId: number): Promise<Permission[]> {
    checkId(userId, 'userId')
    const { rows } = await this.sql.query<Permission>(
      `SELECT DISTINCT ${PERMISSION_COLUMNS} FROM user_roles ur
       JOIN role_permissions rp ON rp.role_id = ur.role_id
       JOIN permissions p ON p.id = rp.permission_id
       WHERE ur.user_id = $1 AND ur.revoked_at IS NULL ORDER BY p.name`,
      [userId],
    )
    return rows
  }

  async userHasPermission(userId: number, permissionName: string): Promise<boolean> {
    checkId(userId, 'userId')
    if (typeof permissionName !== 'string') throw invalid('permissionName', 'permissionName must be a string')
    const { rows } = await this.sql.query(
      `SELECT 1 FROM user_roles ur
       JOIN role_permissions rp ON rp.role_id = ur.role_id
       JOIN permissions p ON p.id = rp.permission_id
       WHERE ur.user_id = $1 AND ur.revoked_at IS NULL AND p.name = $2 LIMIT 1`,
      [userId, permissionName],
    )
    return rows.length > 0
  }

  async userHasRole(userId: number, roleName: string): Promise<boolean> {
    checkId(userId, 'userId')
    if (typeof roleName !== 'string') throw invalid('roleName', 'roleName must be a string')
    const { rows } = await this.sql.query(
      `SELECT 1 FROM user_roles ur JOIN roles r ON r.id = ur.role_id
       WHERE ur.user_id = $1 AND ur.revoked_at IS NULL AND r.name = $2 LIMIT 1`,
      [userId, roleName],
    )
    return rows.length > 0
  }

  /** Role and permission names (sorted, distinct) for the `roles` / `permissions` token claims. */
  async getUserRights(userId: number): Promise<UserRights> {
    checkId(userId, 'userId')
    const { rows } = await this.sql.query<{ kind: 'r' | 'p'; name: string }>(
      `SELECT 'r' AS kind, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id
         WHERE ur.user_id = $1 AND ur.revoked_at IS NULL
       UNION
       SELECT 'p' AS kind, p.name FROM user_roles ur
         JOIN role_permissions rp ON rp.role_id = ur.role_id
         JOIN permissions p ON p.id = rp.permission_id
         WHERE ur.user_id = $1 AND ur.revoked_at IS NULL
       ORDER BY kind, name`,
      [userId],
    )
    return {
      roles: rows.filter((r) => r.kind === 'r').map((r) => r.name),
      permissions: rows.filter((r) => r.kind === 'p').map((r) => r.name),
    }
  }

  /**
   * The user's current rights, cached for `liveCacheTtlMs`. Used by the middleware for endpoints
   * declared `liveRbac: true`; assignRole/revokeRole on this instance drop the user's entry at once.
   */
  liveRights(userId: number): Promise<UserRights> {
    checkId(userId, 'userId')
    if (this.liveCacheTtlMs === 0) return this.getUserRights(userId)
    const now = Date.now()
    const hit = this.live.get(userId)
    if (hit && hit.expires > now) return hit.rights
    const rights = this.getUserRights(userId)
    this.live.delete(userId)
    if (this.live.size >= this.liveCacheMax) {
      const oldest = this.live.keys().next().value
      if (oldest !== undefined) this.live.delete(oldest)
    }
    const entry = { expires: now + this.liveCacheTtlMs, rights }
    this.live.set(userId, entry)
    // A failed read (database down) is not cached.
    rights.catch(() => {
      if (this.live.get(userId) === entry) this.live.delete(userId)
    })
    return rights
  }

  /** Drops cached live rights of one user, or of everyone. */
  invalidateLive(userId?: number): void {
    if (userId === undefined) this.live.clear()
    else this.live.delete(userId)
  }

  /** Every assignment of the user, active and revoked (for audits and admin screens). */
  async getUserAssignments(userId: number): Promise<UserRoleAssignment[]> {
    checkId(userId, 'userId')
    const { rows } = await this.sql.query<UserRoleAssignment>(
      `SELECT ${ASSIGNMENT_COLUMNS} FROM user_roles WHERE user_id = $1 ORDER BY role_id`,
      [userId],
    )
    return rows
  }

  async getRole(roleId: number): Promise<Role | null> {
    checkId(roleId, 'roleId')
    const { rows } = await this.sql.query<Role>(`SELECT ${ROLE_COLUMNS} FROM roles r WHERE r.id = $1`, [
      roleId,
    ])
    return rows[0] ?? null
  }

  async getRoleByName(name: string): Promise<Role | null> {
    if (typeof name !== 'string') throw invalid('name', 'name must be a string')
    const { rows } = await this.sql.query<Role>(`SELECT ${ROLE_COLUMNS} FROM roles r WHERE r.name = $1`, [
      name,
    ])
    return rows[0] ?? null
  }

  async getPermissionByName(name: string): Promise<Permission | null> {
    if (typeof name !== 'string') throw invalid('name', 'name must be a string')
    const { rows } = await this.sql.query<Permission>(
      `SELECT ${PERMISSION_COLUMNS} FROM permissions p WHERE p.name = $1`,
      [name],
    )
    return rows[0] ?? null
  }

  async listRoles(): Promise<Role[]> {
    const { rows } = await this.sql.query<Role>(`SELECT ${ROLE_COLUMNS} FROM roles r ORDER BY r.name`)
    return rows
  }

  async listPermissions(): Promise<Permission[]> {
    const { rows } = await this.sql.query<Permission>(
      `SELECT ${PERMISSION_COLUMNS} FROM permissions p ORDER BY p.name`,
    )
    return rows
  }

  // ── writes ───────────────────────────────────────────────────────────────────────────────────

  /**
   * Upsert per the documented state table:
   * - no row → active, assigned_at = now, assigned_by set;
   * - revoked row → active again: revoked_at/revoked_by cleared, assigned_at/assigned_by overwritten;
   * - already active → unchanged (decision: the original assigned_at/assigned_by are kept).
   * One statement (INSERT … ON CONFLICT), so concurrent calls keep one row per (user, role).
   */
  async assignRole(
    userId: number,
    roleId: number,
    assignedBy?: number | null,
    stop?: WriteStop,
  ): Promise<UserRoleAssignment> {
    checkId(userId, 'userId')
    checkId(roleId, 'roleId')
    const by = checkOptionalId(assignedBy, 'assignedBy')
    if (this.userExists && !(await this.userExists(userId))) throw userNotFound(userId)
    try {
      const { rows } = await this.stoppable(stop, (sql) =>
        sql.query<UserRoleAssignment>(
          `WITH up AS (
           INSERT INTO user_roles (user_id, role_id, assigned_at, assigned_by)
           VALUES ($1, $2, now(), $3)
           ON CONFLICT (user_id, role_id) DO UPDATE
             SET assigned_at = now(), assigned_by = EXCLUDED.assigned_by, revoked_at = NULL, revoked_by = NULL
             WHERE user_roles.revoked_at IS NOT NULL
           RETURNING ${ASSIGNMENT_COLUMNS}
         )
         SELECT ${ASSIGNMENT_COLUMNS} FROM up
         UNION ALL
         SELECT ${ASSIGNMENT_COLUMNS} FROM user_roles
           WHERE user_id = $1 AND role_id = $2 AND NOT EXISTS (SELECT 1 FROM up)`,
          [userId, roleId, by],
        ),
      )
      this.invalidateLive(userId)
      const row = rows[0]
      if (row) return row
      // Active row that a concurrent revoke changed between the statement's snapshot and now.
      return (await this.getAssignment(userId, roleId)) as UserRoleAssignment
    } catch (err) {
      if (isForeignKeyViolation(err)) {
        throw violatedConstraint(err) === USER_FOREIGN_KEY ? userNotFound(userId) : roleNotFound(roleId)
      }
      throw err
    }
  }

  /**
   * Marks the active assignment revoked (revoked_at = now, revoked_by set). Returns the revoked row,
   * or null when the user has no active assignment of that role (nothing changes). An unknown role
   * is NotFoundException.
   */
  async revokeRole(
    userId: number,
    roleId: number,
    revokedBy?: number | null,
    stop?: WriteStop,
  ): Promise<UserRoleAssignment | null> {
    checkId(userId, 'userId')
    checkId(roleId, 'roleId')
    const by = checkOptionalId(revokedBy, 'revokedBy')
    if (this.userExists && !(await this.userExists(userId))) throw userNotFound(userId)
    const { rows } = await this.stoppable(stop, (sql) =>
      sql.query<UserRoleAssignment>(
        `UPDATE user_roles SET revoked_at = now(), revoked_by = $3
         WHERE user_id = $1 AND role_id = $2 AND revoked_at IS NULL
         RETURNING ${ASSIGNMENT_COLUMNS}`,
        [userId, roleId, by],
      ),
    )
    this.invalidateLive(userId)
    if (rows[0]) return rows[0]
    if (!(await this.roleExists(roleId))) throw roleNotFound(roleId)
    return null
  }

  /** The (user, role) row whatever its state, or null. */
  async getAssignment(userId: number, roleId: number): Promise<UserRoleAssignment | null> {
    checkId(userId, 'userId')
    checkId(roleId, 'roleId')
    const { rows } = await this.sql.query<UserRoleAssignment>(
      `SELECT ${ASSIGNMENT_COLUMNS} FROM user_roles WHERE user_id = $1 AND role_id = $2`,
      [userId, roleId],
    )
    return rows[0] ?? null
  }

  /**
   * Creates the role and its permission links in one transaction: a duplicate name
   * (ConflictException) or an unknown permission id (NotFoundException) leaves nothing behind.
   */
  async createRole(
    name: string,
    description: string,
    permissionIds: number[] = [],
    stop?: WriteStop,
  ): Promise<Role> {
    checkName(name, 'name')
    const desc = checkDescription(description)
    const ids = checkIdList(permissionIds, 'permissionIds')
    stop?.throwIfAborted()
    return this.sql.transaction(async (tx) => {
      if (ids.length > 0) {
        const found = await tx.query<{ id: number }>(
          'SELECT id FROM permissions WHERE id = ANY($1::integer[])',
          [ids],
        )
        const known = new Set(found.rows.map((r) => r.id))
        const missing = ids.filter((id) => !known.has(id))
        if (missing.length > 0) throw permissionNotFound(missing)
      }
      let role: Role
      try {
        const { rows } = await tx.query<Role>(
          'INSERT INTO roles (name, description) VALUES ($1, $2) RETURNING id, name, description, created_at',
          [name, desc],
        )
        role = returned(rows)
        if (ids.length > 0) {
          await tx.query(
            'INSERT INTO role_permissions (role_id, permission_id) SELECT $1, unnest($2::integer[])',
            [role.id, ids],
          )
        }
      } catch (err) {
        if (isUniqueViolation(err)) throw nameTaken('Role', name)
        if (isForeignKeyViolation(err)) throw permissionNotFound(ids) // a permission vanished meanwhile
        throw err
      }
      stop?.throwIfAborted() // the last step before COMMIT
      return role
    })
  }

  /** Creates a permission. A duplicate name is ConflictException. */
  async createPermission(
    name: string,
    description: string,
    resource: string,
    action: string,
    stop?: WriteStop,
  ): Promise<Permission> {
    checkName(name, 'name')
    const desc = checkDescription(description)
    checkName(resource, 'resource')
    checkName(action, 'action')
    try {
      const { rows } = await this.stoppable(stop, (sql) =>
        sql.query<Permission>(
          `INSERT INTO permissions (name, description, resource, action) VALUES ($1, $2, $3, $4)
           RETURNING id, name, description, resource, action, created_at`,
          [name, desc, resource, action],
        ),
      )
      return returned(rows)
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken('Permission', name)
      throw err
    }
  }

  /**
   * Runs one write statement so that `stop` can still drop it: checked before, and inside a transaction as
   * the last step before COMMIT. Without `stop`, one autocommit statement (no BEGIN/COMMIT round trips).
   */
  private async stoppable<T>(stop: WriteStop | undefined, write: (sql: SqlClient) => Promise<T>): Promise<T> {
    if (stop === undefined) return write(this.sql)
    stop.throwIfAborted()
    return this.sql.transaction(async (tx) => {
      const result = await write(tx)
      stop.throwIfAborted()
      return result
    })
  }

  private async roleExists(roleId: number): Promise<boolean> {
    const { rows } = await this.sql.query('SELECT 1 FROM roles WHERE id = $1', [roleId])
    return rows.length > 0
  }
}

/** The row of an INSERT … RETURNING of one row (PostgreSQL returns it or raises). */
function returned<T>(rows: readonly T[]): T {
  const row = rows[0]
  if (row === undefined) throw new Error('@trivium/rbac: INSERT … RETURNING returned no row')
  return row
}
