// AuthService: tokens + revocation list + (optionally) the ledger of issued tokens, without Fastify.
// This is what `fastify.triviumAuth` exposes.
import { UnauthorizedException } from '@trivium/core'
import type { TokenClaims, TokenSubject, ValidationResult } from './claims.js'
import { publishRevoked } from './diagnostics.js'
import type { TokenLedger } from './ledger.js'
import { authenticateToken } from './middleware.js'
import type { RevocationStore } from './revocation.js'
import { SETUP } from './setup-errors.js'
import type { IssueAccessOptions, TokenService } from './tokens.js'

/** Fills roles and permissions of an access token (e.g. from @trivium/rbac). */
export type RolesProvider = (userId: number) => Promise<{ roles: string[]; permissions: string[] }>

/** The user an access token is issued for; roles/permissions come from the RolesProvider when absent. */
export interface AccessSubject {
  id: number
  username: string
  email: string
  roles?: readonly string[]
  permissions?: readonly string[]
}

export interface TokenPair {
  accessToken: string
  refreshToken: string
  /** Lifetime of the access token in seconds. */
  expiresIn: number
}

/**
 * What was just revoked: one token (`tokenId`, logout or `revokeToken`) or every token of a user
 * (`userId`, refresh-token reuse or `revokeAllForUser`). Close the matching WebSocket/TCP sessions
 * here (`fastify.push.closeSessions(notice, …)`), on every instance if you run several.
 */
export interface RevocationNotice {
  tokenId?: string
  userId?: number
  /** How many tokens were revoked. */
  count: number
}

/** Called after a revocation is stored; awaited; a rejection goes to `onListenerError`. */
export type RevokedListener = (notice: RevocationNotice) => unknown

export interface AuthServiceOptions {
  tokens: TokenService
  revocation: RevocationStore
  rolesProvider?: RolesProvider
  ledger?: TokenLedger
  /** Receives a revocation listener's rejection (default: ignored). */
  onListenerError?: (err: unknown) => void
}

export class AuthService {
  readonly tokens: TokenService
  readonly revocation: RevocationStore
  readonly ledger: TokenLedger | undefined
  private readonly rolesProvider: RolesProvider | undefined
  private readonly revokedListeners: RevokedListener[] = []
  private readonly onListenerError: (err: unknown) => void

  constructor(options: AuthServiceOptions) {
    this.tokens = options.tokens
    this.revocation = options.revocation
    this.rolesProvider = options.rolesProvider
    this.ledger = options.ledger
    this.onListenerError = options.onListenerError ?? (() => {})
    if (this.rolesProvider !== undefined && typeof this.rolesProvider !== 'function') {
      throw SETUP.TRV_AUTH_ROLES_PROVIDER()
    }
  }

  /** Calls `listener` after every revocation (see RevocationNotice). */
  onRevoked(listener: RevokedListener): void {
    if (typeof listener !== 'function') throw SETUP.TRV_AUTH_ON_REVOKED()
    this.revokedListeners.push(listener)
  }

  private async announce(notice: RevocationNotice): Promise<void> {
    publishRevoked(notice.count)
    for (const listener of this.revokedListeners) {
      try {
        await listener(notice)
      } catch (err) {
        // The tokens are revoked already; the listener's failure must not undo or hide that.
        this.onListenerError(err)
      }
    }
  }

  private async subjectOf(user: AccessSubject): Promise<TokenSubject> {
    let roles = user.roles
    let permissions = user.permissions
    if (roles === undefined && this.rolesProvider) {
      const provided = await this.rolesProvider(user.id)
      roles = provided.roles
      permissions = permissions ?? provided.permissions
    }
    return {
      userId: user.id,
      username: user.username,
      email: user.email,
      roles: roles ?? [],
      permissions: permissions ?? [],
    }
  }

  /** Issues an access token (default lifetime, or `ttlSeconds`). */
  async issueAccessToken(user: AccessSubject, options: IssueAccessOptions = {}): Promise<string> {
    const issued = this.tokens.signAccessToken(await this.subjectOf(user), options)
    await this.ledger?.record(user.id, issued.jti, issued.exp)
    return issued.token
  }

  /** Issues a refresh token (7 days). */
  async issueRefreshToken(userId: number): Promise<string> {
    const issued = this.tokens.signRefreshToken(userId)
    await this.ledger?.record(userId, issued.jti, issued.exp)
    return issued.token
  }

  /** Issues an access token and a refresh token. */
  async issueTokenPair(user: AccessSubject): Promise<TokenPair> {
    const accessToken = await this.issueAccessToken(user)
    const refreshToken = await this.issueRefreshToken(user.id)
    return { accessToken, refreshToken, expiresIn: this.tokens.accessTokenTtlSeconds }
  }

  /** The documented validation result (revocation is not part of it). */
  validate(token: unknown): ValidationResult {
    return this.tokens.validate(token)
  }

  /** Validation plus revocation check, throwing the middleware's errors. */
  authenticate(token: string): Promise<TokenClaims> {
    return authenticateToken(this.tokens, this.revocation, token)
  }

  /**
   * Verifies the token's signature, reads its jti and lists it with a TTL equal to the remaining
   * lifetime. An already expired token needs no entry. Throws UnauthorizedException
   * `Invalid token: <reason>` for a token whose signature does not check out.
   */
  async revokeToken(token: string): Promise<void> {
    let payload: ReturnType<TokenService['verifySignature']>
    try {
      payload = this.tokens.verifySignature(token)
    } catch (err) {
      throw new UnauthorizedException(
        `Invalid token: ${err instanceof Error ? err.message : 'unknown error'}`,
      )
    }
    this.tokens.forget(token)
    const remaining = payload.exp - Math.floor(this.tokens.clock() / 1000)
    if (remaining <= 0) return
    await this.revocation.add(payload.jti, remaining)
    await this.announce({ tokenId: payload.jti, count: 1 })
  }

  /**
   * Revokes every unexpired token issued to the user (needs a ledger). Used when a revoked refresh
   * token is presented again (token theft). Resolves to how many tokens were revoked.
   */
  async revokeAllForUser(userId: number): Promise<number> {
    if (!this.ledger) return 0
    const nowSec = Math.floor(this.tokens.clock() / 1000)
    const active = await this.ledger.listActive(userId, nowSec)
    for (const entry of active) await this.revocation.add(entry.jti, entry.exp - nowSec)
    this.tokens.clearCache()
    await this.announce({ userId, count: active.length })
    return active.length
  }
}
