// The user store the credential flows need. The SQL implementation is SqlUserStore in
// `@trivium/auth/sql`.

/**
 * The handle a user store's `transaction()` passes to hooks. `unknown` until a store says what it
 * is: importing `@trivium/auth/sql` makes it a `SqlClient` (declaration merging).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging
export interface AuthTransactionTypes {}
export type AuthTransaction = AuthTransactionTypes extends { tx: infer T } ? T : unknown

export interface UserRecord {
  id: number
  username: string
  email: string
  passwordHash: string
  /** TOTP secret encrypted with DataEncryptor (`<iv>:<ciphertext>`), or null. */
  totpSecret: string | null
  totpEnabled: boolean
  createdAt: Date
}

export interface NewUser {
  username: string
  email: string
  passwordHash: string
}

/** Thrown by `create` when the username or the e-mail is taken. */
export class DuplicateUserError extends Error {
  constructor(readonly field: 'username' | 'email') {
    super(`@trivium/auth: ${field} already exists`)
    this.name = 'DuplicateUserError'
  }
}

export interface UserStore {
  /** Creates a user; rejects with DuplicateUserError when username or e-mail is taken. */
  create(user: NewUser): Promise<UserRecord>
  /** Case-insensitive lookup. */
  findByUsername(username: string): Promise<UserRecord | undefined>
  findById(id: number): Promise<UserRecord | undefined>
  /** Sets (or clears, with null) the encrypted TOTP secret and the enabled flag. */
  setTotp(id: number, encryptedSecret: string | null, enabled: boolean): Promise<void>
  /**
   * Optional: runs `fn` in one database transaction, with a store and a SQL client bound to it;
   * commits when `fn` resolves, rolls back when it rejects. Needed by the flows' `onRegistered` hook.
   */
  transaction?<T>(fn: (users: UserStore, tx: AuthTransaction) => Promise<T>): Promise<T>
  /** Optional: creates or updates the store's tables; the plugin calls it at registration. */
  migrate?(): Promise<void>
}
