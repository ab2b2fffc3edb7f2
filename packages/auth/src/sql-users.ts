// SqlUserStore: the user store of the credential flows on PostgreSQL and PGlite (table auth_users,
// created by the package's migrations).
import { isUniqueViolation, type SqlClient, violatedConstraint } from '@trivium/sql'
import { SETUP } from './setup-errors.js'
import { migrateAuth } from './sql-store.js'
import { DuplicateUserError, type NewUser, type UserRecord, type UserStore } from './users.js'

interface Row {
  id: string | number
  username: string
  email: string
  password_hash: string
  totp_secret: string | null
  totp_enabled: boolean
  created_at: Date | string
}

function toRecord(row: Row): UserRecord {
  return {
    id: Number(row.id),
    username: row.username,
    email: row.email,
    passwordHash: row.password_hash,
    totpSecret: row.totp_secret,
    totpEnabled: row.totp_enabled,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  }
}

// Outside the class on purpose: a class body that names its own class is emitted by the bundler as
// `class _SqlUserStore`, and `SqlUserStore.name` would then say so (scripts/test/export-names.test.ts).
const storeOver = (tx: SqlClient): UserStore => new SqlUserStore(tx)

const COLUMNS = 'id, username, email, password_hash, totp_secret, totp_enabled, created_at'

export class SqlUserStore implements UserStore {
  constructor(private readonly client: SqlClient) {
    if (typeof client?.query !== 'function') throw SETUP.TRV_AUTH_SQL_CLIENT('SqlUserStore')
  }

  migrate(): Promise<void> {
    return migrateAuth(this.client)
  }

  /** One transaction: `fn` gets a SqlUserStore over `tx` and `tx` itself (for the caller's own writes). */
  transaction<T>(fn: (users: UserStore, tx: SqlClient) => Promise<T>): Promise<T> {
    return this.client.transaction((tx) => fn(storeOver(tx), tx))
  }

  async create(user: NewUser): Promise<UserRecord> {
    try {
      const { rows } = await this.client.query<Row>(
        `INSERT INTO auth_users (username, email, password_hash) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
        [user.username, user.email, user.passwordHash],
      )
      const [row] = rows
      if (row === undefined) throw new Error('INSERT … RETURNING returned no row')
      return toRecord(row)
    } catch (err) {
      if (isUniqueViolation(err)) {
        const constraint = violatedConstraint(err) ?? (err instanceof Error ? err.message : '')
        throw new DuplicateUserError(constraint.includes('email') ? 'email' : 'username')
      }
      throw err
    }
  }

  async findByUsername(username: string): Promise<UserRecord | undefined> {
    const { rows } = await this.client.query<Row>(
      `SELECT ${COLUMNS} FROM auth_users WHERE lower(username) = lower($1)`,
      [username],
    )
    return rows[0] ? toRecord(rows[0]) : undefined
  }

  async findById(id: number): Promise<UserRecord | undefined> {
    if (!Number.isSafeInteger(id)) return undefined
    const { rows } = await this.client.query<Row>(`SELECT ${COLUMNS} FROM auth_users WHERE id = $1`, [id])
    return rows[0] ? toRecord(rows[0]) : undefined
  }

  async setTotp(id: number, encryptedSecret: string | null, enabled: boolean): Promise<void> {
    await this.client.query('UPDATE auth_users SET totp_secret = $2, totp_enabled = $3 WHERE id = $1', [
      id,
      encryptedSecret,
      enabled,
    ])
  }
}
