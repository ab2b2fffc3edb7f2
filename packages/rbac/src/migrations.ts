// Tables of the documented rights-model records, applied by runMigrations(sql, 'rbac', …).
// user_roles.user_id has no foreign key here: users live in a table owned by @trivium/auth (or the
// application), which this package must not assume. The `usersTable` option adds one
// (`referenceUsers`) and checks ids on assignment and revocation.
import type { Migration } from '@trivium/sql'

export const RBAC_COMPONENT = 'rbac'

export const RBAC_MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'roles, permissions, role_permissions, user_roles',
    sql: `
CREATE TABLE roles (
  id serial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  description text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE permissions (
  id serial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  description text NOT NULL DEFAULT '',
  resource text NOT NULL,
  action text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE role_permissions (
  role_id integer NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  permission_id integer NOT NULL REFERENCES permissions (id) ON DELETE CASCADE,
  PRIMARY KEY (role_id, permission_id)
);
CREATE INDEX role_permissions_permission_id ON role_permissions (permission_id);
CREATE TABLE user_roles (
  user_id integer NOT NULL,
  role_id integer NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  assigned_at timestamptz NOT NULL DEFAULT now(),
  assigned_by integer,
  revoked_at timestamptz,
  revoked_by integer,
  PRIMARY KEY (user_id, role_id)
);
CREATE INDEX user_roles_role_id ON user_roles (role_id);
`,
  },
]
