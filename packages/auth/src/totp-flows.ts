// The TOTP half of the credential flows: enable, confirm, disable, and the check login uses. A code is
// good once (RFC 6238 §5.2): an accepted code is listed in the revocation store for its whole window,
// per user, so a replay is refused on every instance that shares the store.
import { type CallTarget, type TriviumCall, ValidationException } from '@trivium/core'
import { TOTP_STEP_SECONDS, TOTP_WINDOW, totp } from '@trivium/crypto'
import type { FlowsContext } from './flows-context.js'
import type { AuthService } from './service.js'

export const TOTP_REQUIRED = 'TOTP code required'
export const INVALID_TOTP = 'Invalid TOTP code'
export const TOTP_ALREADY_ENABLED = 'TOTP is already enabled'
export const TOTP_NOT_STARTED = 'TOTP setup has not been started'
export const TOTP_NOT_ENABLED = 'TOTP is not enabled'

/** How long an accepted code stays listed: every step in which it could be accepted. */
const USED_CODE_TTL_SECONDS = (2 * TOTP_WINDOW + 1) * TOTP_STEP_SECONDS

/** The revocation-store key of a used code (same namespace as token ids, never a valid jti shape). */
function usedCodeKey(userId: number, code: string): string {
  return `totp-used:${userId}:${code}`
}

/**
 * True when `code` is valid for `secret` now and was not used before by this user; lists it as used.
 * Check-then-add: two instances given the same code in the same millisecond could both accept it.
 */
export async function acceptTotp(auth: AuthService, userId: number, code: string, secret: string) {
  if (!totp.verify(code, secret, { at: auth.tokens.clock() })) return false
  const key = usedCodeKey(userId, code)
  if (await auth.revocation.contains(key)) return false
  await auth.revocation.add(key, USED_CODE_TTL_SECONDS)
  return true
}

export function createTotpFlows(ctx: FlowsContext) {
  const { users, encryptor, currentUser, auth, totpIssuer } = ctx
  return {
    totpEnable: async (_req: unknown, call: TriviumCall<unknown, CallTarget>) => {
      const user = await currentUser(call)
      if (user.totpEnabled) throw new ValidationException(TOTP_ALREADY_ENABLED)
      const secret = totp.generateSecret()
      await users.setTotp(user.id, encryptor.encrypt(secret), false)
      return { secret, otpauthUrl: totp.keyUri({ secret, accountName: user.username, issuer: totpIssuer }) }
    },
    totpConfirm: async (req: { code: string }, call: TriviumCall<unknown, CallTarget>) => {
      const user = await currentUser(call)
      if (user.totpEnabled) throw new ValidationException(TOTP_ALREADY_ENABLED)
      if (!user.totpSecret) throw new ValidationException(TOTP_NOT_STARTED)
      if (!(await acceptTotp(auth, user.id, req.code, encryptor.decrypt(user.totpSecret)))) {
        throw new ValidationException(INVALID_TOTP, [{ field: 'code', message: INVALID_TOTP }])
      }
      await users.setTotp(user.id, user.totpSecret, true)
      return { totpEnabled: true }
    },
    totpDisable: async (req: { code: string }, call: TriviumCall<unknown, CallTarget>) => {
      const user = await currentUser(call)
      if (!user.totpEnabled || !user.totpSecret) throw new ValidationException(TOTP_NOT_ENABLED)
      if (!(await acceptTotp(auth, user.id, req.code, encryptor.decrypt(user.totpSecret)))) {
        throw new ValidationException(INVALID_TOTP, [{ field: 'code', message: INVALID_TOTP }])
      }
      await users.setTotp(user.id, null, false)
      return { totpEnabled: false }
    },
  }
}
