// Session flows: login (password, then TOTP), refresh with rotation and reuse detection, logout.
import {
  type CallTarget,
  TokenExpiredException,
  type TriviumCall,
  UnauthorizedException,
} from '@trivium/core'
import { verifyPassword } from '@trivium/crypto'
import { type FlowsContext, USER_GONE } from './flows-context.js'
import { TOKEN_EXPIRED_MESSAGE, TOKEN_REVOKED } from './middleware.js'
import type { TokenPair } from './service.js'
import { acceptTotp, INVALID_TOTP, TOTP_REQUIRED } from './totp-flows.js'

export const INVALID_CREDENTIALS = 'Invalid username or password'

/**
 * A bcrypt hash at cost 12 (BCRYPT_COST, as every stored hash) of 24 random bytes that were thrown away. An
 * unknown username's password is compared with it, so a wrong username and a wrong password cost the same
 * one compare and take the same time. Written here rather than hashed at start-up, which cost every
 * instance ~0.3 s of CPU; no password is known to match it, and a match signs nobody in (there is no user).
 */
export const DUMMY_HASH = '$2b$12$baJMGXBP.oanLJye09cCtOXmulFJ.WHQY/FC4cGT8yfsdOGuJVF4S'

export function createSessionFlows(ctx: FlowsContext) {
  return { login: loginFlow(ctx), refresh: refreshFlow(ctx), logout: logoutFlow(ctx) }
}

/** Password, then the TOTP code when the user has enabled it. */
function loginFlow(ctx: FlowsContext) {
  const { auth, users, encryptor } = ctx
  return async (req: {
    username: string
    password: string
    totpCode?: string | null
  }): Promise<TokenPair> => {
    const user = req.username.length <= 254 ? await users.findByUsername(req.username) : undefined
    const matches = await verifyPassword(req.password, user?.passwordHash ?? DUMMY_HASH)
    if (!user || !matches) throw new UnauthorizedException(INVALID_CREDENTIALS)
    if (user.totpEnabled) {
      if (!req.totpCode) throw new UnauthorizedException(TOTP_REQUIRED)
      const secret = user.totpSecret ? encryptor.decrypt(user.totpSecret) : ''
      if (!(await acceptTotp(auth, user.id, req.totpCode, secret)))
        throw new UnauthorizedException(INVALID_TOTP)
    }
    return auth.issueTokenPair(user)
  }
}

/** A refresh token exchanged once for a new pair; a second use is theft: everything of the user is revoked. */
function refreshFlow(ctx: FlowsContext) {
  const { auth, users, ledger, onTheft } = ctx
  const tokens = auth.tokens

  function nowSec(): number {
    return Math.floor(tokens.clock() / 1000)
  }

  async function announceTheft(userId: number): Promise<void> {
    if (!onTheft) return
    try {
      await onTheft(userId)
    } catch {
      // Documented: the tokens are revoked already; the callback reports its own failures.
    }
  }

  return async (req: { refreshToken: string }): Promise<TokenPair> => {
    const result = tokens.validateRefresh(req.refreshToken)
    if (result.isExpired) throw new TokenExpiredException(TOKEN_EXPIRED_MESSAGE)
    if (!result.isValid || !result.claims) throw new UnauthorizedException(`Invalid token: ${result.error}`)
    const { jti, userId, expiresAtMs } = result.claims
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
    await auth.revocation.add(jti, Math.max(1, Math.floor(expiresAtMs / 1000) - nowSec()))
    const user = await users.findById(userId)
    if (!user) throw new UnauthorizedException(USER_GONE)
    const pair = await auth.issueTokenPair(user)
    if (await ledger.isReused(jti)) {
      await auth.revokeToken(pair.accessToken)
      await auth.revokeToken(pair.refreshToken)
      throw new UnauthorizedException(TOKEN_REVOKED)
    }
    return pair
  }
}

/** Revokes the call's access token and, when given, the user's own refresh token. */
function logoutFlow(ctx: FlowsContext) {
  const { auth } = ctx
  const tokens = auth.tokens
  return async (req: { refreshToken?: string | null }, call: TriviumCall<unknown, CallTarget>) => {
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
  }
}
