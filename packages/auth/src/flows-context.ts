// What every credential flow shares: the checked options, the user store, the ledger, the TOTP
// encryptor. Built once by createAuthFlows.
import { type CallTarget, type TriviumCall, UnauthorizedException } from '@trivium/core'
import { DataEncryptor } from '@trivium/crypto'
import type { TokenLedger } from './ledger.js'
import type { AuthService } from './service.js'
import { SETUP } from './setup-errors.js'
import type { AuthTransaction, UserRecord, UserStore } from './users.js'

export const USER_GONE = 'Invalid token: user no longer exists'

/**
 * Runs right after the user row is written, inside the same transaction: write the user's other rows
 * (e.g. a role with an RbacService over `tx`) through `tx`. A rejection rolls the user back and
 * `register` rejects with it.
 */
export type RegisteredHook = (user: UserRecord, tx: AuthTransaction) => unknown

/** Per-call options of `register`. */
export interface RegisterOptions {
  /** Runs after the flows' own `onRegistered`, in the same transaction. */
  onRegistered?: RegisteredHook
  /**
   * The call that registers (its deadline, a cancel, the client leaving stop it): checked with
   * `call.throwIfAborted()` once the password is hashed and as the last step before the write's COMMIT,
   * which then rolls back; `register` rejects with the call's TimeoutException (or other reason) and no
   * user is left behind.
   */
  call?: Pick<TriviumCall<unknown, CallTarget>, 'throwIfAborted'>
}

export interface FlowsOptions {
  /** Where users live. */
  users: UserStore
  /** ENCRYPTION_KEY (standard base64 of 32 bytes): encrypts TOTP secrets at rest. */
  encryptionKey: string
  /** URL prefix of the endpoints (default `/auth`). */
  basePath?: string
  /** Minimum password length for registration (default 8). */
  passwordMinLength?: number
  /** Issuer shown by authenticator apps (default: the token issuer). */
  totpIssuer?: string
  /**
   * Runs for every registration inside the transaction that creates the user (see RegisteredHook).
   * Needs a user store with `transaction()` (SqlUserStore).
   */
  onRegistered?: RegisteredHook
  /**
   * Called when a reused refresh token made `refresh` revoke every token of the user (theft), after
   * the revocation: close that user's open sessions here (the revocation list only stops their next
   * request). Awaited; a rejection is ignored (the tokens are revoked and the request is refused
   * with `Token has been revoked` all the same), so report failures inside the callback.
   */
  onTheft?: (userId: number) => unknown
}

export interface FlowsContext {
  auth: AuthService
  users: UserStore
  ledger: TokenLedger
  encryptor: DataEncryptor
  minLength: number
  totpIssuer: string
  onRegistered: RegisteredHook | undefined
  onTheft: ((userId: number) => unknown) | undefined
  /** The authenticated caller's user row; UnauthorizedException when it is gone. */
  currentUser(call: TriviumCall<unknown, CallTarget>): Promise<UserRecord>
}

/** Checks the flows' options (messages name the option) and builds the shared context. */
export function flowsContext(auth: AuthService, options: FlowsOptions): FlowsContext {
  if (typeof options !== 'object' || options === null) throw SETUP.TRV_AUTH_FLOWS_OPTIONS()
  const users = options.users
  if (!users || typeof users.findByUsername !== 'function') {
    throw SETUP.TRV_AUTH_FLOWS_USERS()
  }
  if (typeof options.encryptionKey !== 'string' || options.encryptionKey.length === 0) {
    throw SETUP.TRV_AUTH_FLOWS_ENCRYPTION_KEY()
  }
  if (!auth.ledger) throw SETUP.TRV_AUTH_FLOWS_LEDGER()
  const { onRegistered, onTheft } = options
  if (onRegistered !== undefined && typeof onRegistered !== 'function')
    throw SETUP.TRV_AUTH_FLOWS_ON_REGISTERED()
  if (onRegistered !== undefined && typeof users.transaction !== 'function') {
    throw SETUP.TRV_AUTH_FLOWS_TRANSACTION()
  }
  if (onTheft !== undefined && typeof onTheft !== 'function') throw SETUP.TRV_AUTH_FLOWS_ON_THEFT()
  const ledger = auth.ledger
  const encryptor = new DataEncryptor(options.encryptionKey)
  const base = options.basePath ?? '/auth'
  if (typeof base !== 'string' || !base.startsWith('/') || base.endsWith('/')) {
    throw SETUP.TRV_AUTH_FLOWS_BASE_PATH()
  }
  const minLength = options.passwordMinLength ?? 8
  const totpIssuer = options.totpIssuer ?? auth.tokens.issuer

  return {
    auth,
    users,
    ledger,
    encryptor,
    minLength,
    totpIssuer,
    onRegistered,
    onTheft,
    async currentUser(call) {
      const user = await users.findById(Number(call.identity?.userId))
      if (!user) throw new UnauthorizedException(USER_GONE)
      return user
    },
  }
}
