// Credential flows as plain functions (README "Credential flows"): register, login (+ TOTP), refresh
// with rotation and reuse detection, logout, me, and TOTP enable/confirm/disable. flow-endpoints.ts
// registers them as core endpoints; totp-flows.ts holds the TOTP half.
import { randomBytes } from 'node:crypto'
import {
  TokenExpiredException,
  type TriviumCall,
  UnauthorizedException,
  ValidationException,
} from '@trivium/core'
import { DataEncryptor, hashPassword, verifyPassword } from '@trivium/crypto'
import { validateEmail, validatePassword, validateUsername } from '@trivium/validation'
import { TOKEN_EXPIRED_MESSAGE, TOKEN_REVOKED } from './middleware.js'
import type { AuthService, TokenPair } from './service.js'
import { acceptTotp, createTotpFlows, INVALID_TOTP, TOTP_REQUIRED } from './totp-flows.js'
import {
  type AuthTransaction,
  DuplicateUserError,
  type NewUser,
  type UserRecord,
  type UserStore,
} from './users.js'

export const INVALID_CREDENTIALS = 'Invalid username or password'
export const USERNAME_TAKEN = 'Username is already taken'
export const EMAIL_TAKEN = 'Email is already registered'
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

function publicUser(user: UserRecord) {
  return { id: user.id, username: user.username, email: user.email, createdAt: user.createdAt.toISOString() }
}

/**
 * The credential flows as plain functions (register, login, refresh, logout, me, TOTP). Use them to
 * serve the flows under your own models and routes; `registerFlows` registers them on core as is.
 */
export function createAuthFlows(auth: AuthService, options: FlowsOptions) {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('@trivium/auth: flows options are required')
  const users = options.users
  if (!users || typeof users.findByUsername !== 'function') {
    throw new TypeError(
      '@trivium/auth: flows need a user store (flows.users, e.g. SqlUserStore from @trivium/auth/sql)',
    )
  }
  if (typeof options.encryptionKey !== 'string' || options.encryptionKey.length === 0) {
    throw new TypeError('@trivium/auth: flows.encryptionKey is required (standard base64 of 32 bytes)')
  }
  if (!auth.ledger) throw new TypeError('@trivium/auth: flows need a token ledger (refresh rotation)')
  const { onRegistered, onTheft } = options
  if (onRegistered !== undefined && typeof onRegistered !== 'function')
    throw new TypeError('@trivium/auth: flows.onRegistered must be a function')
  if (onRegistered !== undefined && typeof users.transaction !== 'function') {
    throw new TypeError(
      '@trivium/auth: flows.onRegistered needs a user store with transaction() (e.g. SqlUserStore)',
    )
  }
  if (onTheft !== undefined && typeof onTheft !== 'function')
    throw new TypeError('@trivium/auth: flows.onTheft must be a function')
  const ledger = auth.ledger
  const encryptor = new DataEncryptor(options.encryptionKey)
  const base = options.basePath ?? '/auth'
  if (typeof base !== 'string' || !base.startsWith('/') || base.endsWith('/')) {
    throw new TypeError('@trivium/auth: flows.basePath must start with "/" and not end with "/"')
  }
  const minLength = options.passwordMinLength ?? 8
  const totpIssuer = options.totpIssuer ?? auth.tokens.issuer
  const tokens = auth.tokens

  // A real bcrypt hash of a random password: an unknown username costs one bcrypt compare too, so
  // wrong username and wrong password take the same time.
  const dummyHash = hashPassword(randomBytes(24).toString('base64url'))
  dummyHash.catch(() => {})

  async function currentUser(call: TriviumCall<any>): Promise<UserRecord> {
    const user = await users.findById(Number(call.identity?.userId))
    if (!user) throw new UnauthorizedException(USER_GONE)
    return user
  }

  function nowSec(): number {
    return Math.floor(tokens.clock() / 1000)
  }

  /** Creates the user; with hooks, user row and hooks' writes commit together or not at all. */
  async function createUser(newUser: NewUser, extra: RegisteredHook | undefined): Promise<UserRecord> {
    const hooks = [onRegistered, extra].filter((h): h is RegisteredHook => h !== undefined)
    if (hooks.length === 0) return users.create(newUser)
    if (typeof users.transaction !== 'function') {
      throw new TypeError(
        '@trivium/auth: onRegistered needs a user store with transaction() (e.g. SqlUserStore)',
      )
    }
    return users.transaction(async (store, tx) => {
      const user = await store.create(newUser)
      for (const hook of hooks) await hook(user, tx)
      return user
    })
  }

  async function announceTheft(userId: number): Promise<void> {
    if (!onTheft) return
    try {
      await onTheft(userId)
    } catch {
      // Documented: the tokens are revoked already; the callback reports its own failures.
    }
  }

  const flows = {
    register: async (
      req: { username: string; email: string; password: string },
      registerOptions: RegisterOptions = {},
    ) => {
      const username = validateUsername(req.username)
      const email = validateEmail(req.email)
      const password = validatePassword(req.password, { minLength })
      const extra = registerOptions.onRegistered
      if (extra !== undefined && typeof extra !== 'function')
        throw new TypeError('@trivium/auth: register onRegistered must be a function')
      // Hashed before the transaction: bcrypt must not hold a pooled connection.
      const passwordHash = await hashPassword(password)
      try {
        return publicUser(await createUser({ username, email, passwordHash }, extra))
      } catch (err) {
        if (err instanceof DuplicateUserError) {
          const message = err.field === 'email' ? EMAIL_TAKEN : USERNAME_TAKEN
          throw new ValidationException(message, [{ field: err.field, message }])
        }
        throw err
      }
    },
    login: async (req: {
      username: string
      password: string
      totpCode?: string | null
    }): Promise<TokenPair> => {
      const user = req.username.length <= 254 ? await users.findByUsername(req.username) : undefined
      const matches = await verifyPassword(req.password, user?.passwordHash ?? (await dummyHash))
      if (!user || !matches) throw new UnauthorizedException(INVALID_CREDENTIALS)
      if (user.totpEnabled) {
        if (!req.totpCode) throw new UnauthorizedException(TOTP_REQUIRED)
        const secret = user.totpSecret ? encryptor.decrypt(user.totpSecret) : ''
        if (!(await acceptTotp(auth, user.id, req.totpCode, secret)))
          throw new UnauthorizedException(INVALID_TOTP)
      }
      return auth.issueTokenPair(user)
    },
    refresh: async (req: { refreshToken: string }): Promise<TokenPair> => {
      const result = tokens.validateRefresh(req.refreshToken)
      if (result.isExpired) throw new TokenExpiredException(TOKEN_EXPIRED_MESSAGE)
      if (!result.isValid || !result.claims) throw new UnauthorizedException(`Invalid token: ${result.error}`)
      const { jti, userId, expiresAt } = result.claims
      // A refresh token is good once. Listed or already exchanged means it was used before: someone
      // holds a copy. Revoke everything issued to the user, and refuse.
      const reused = (await auth.revocation.contains(jti)) || !(await ledger.consume(jti))
      if (reused) {
        // Flag first, then revoke: a concurrent winner either sees the flag below or has already
        // recorded its new tokens, which revokeAllForUser then finds.
        await ledger.markReused(jti)
        await auth.revokeAllForUser(userId)
        await announceTheft(userId)
        throw new UnauthorizedException(TOKEN_REVOKED)
      }
      await auth.revocation.add(jti, Math.max(1, Math.floor(expiresAt.getTime() / 1000) - nowSec()))
      const user = await users.findById(userId)
      if (!user) throw new UnauthorizedException(USER_GONE)
      const pair = await auth.issueTokenPair(user)
      if (await ledger.isReused(jti)) {
        await auth.revokeToken(pair.accessToken)
        await auth.revokeToken(pair.refreshToken)
        throw new UnauthorizedException(TOKEN_REVOKED)
      }
      return pair
    },
    logout: async (req: { refreshToken?: string | null }, call: TriviumCall<any>) => {
      const userId = Number(call.identity?.userId)
      let refreshToken: string | undefined
      if (req.refreshToken !== undefined && req.refreshToken !== null) {
        const result = tokens.validateRefresh(req.refreshToken)
        if (result.isValid && result.claims) {
          if (result.claims.userId !== userId)
            throw new UnauthorizedException('Invalid token: refresh token of another user')
          refreshToken = req.refreshToken
        } else if (!result.isExpired) {
          throw new UnauthorizedException(`Invalid token: ${result.error}`)
        }
      }
      const accessToken = call.credential
      if (accessToken) await auth.revokeToken(accessToken)
      if (refreshToken) await auth.revokeToken(refreshToken)
      return { loggedOut: true }
    },
    me: async (_req: unknown, call: TriviumCall<any>) => {
      const user = await currentUser(call)
      return {
        ...publicUser(user),
        roles: call.identity?.roles ?? [],
        permissions: call.identity?.permissions ?? [],
        totpEnabled: user.totpEnabled,
      }
    },
  }

  const totpFlows = createTotpFlows({ users, encryptor, currentUser, auth, issuer: totpIssuer })
  return { ...flows, ...totpFlows, ready: dummyHash.then(() => undefined) }
}

export type AuthFlows = ReturnType<typeof createAuthFlows>
