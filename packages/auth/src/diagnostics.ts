// Auth's `node:diagnostics_channel` messages (names from @trivium/core's TRIVIUM_CHANNELS), so metrics
// and audits observe revocations and refused credentials without a logger.
import diagnostics from 'node:diagnostics_channel'
import { TRIVIUM_CHANNELS } from '@trivium/core'

export const AUTH_REVOKED_CHANNEL = TRIVIUM_CHANNELS.authRevoked
export const AUTH_FAILURE_CHANNEL = TRIVIUM_CHANNELS.authFailure

export type AuthFailureReason = 'missing' | 'expired' | 'revoked' | 'invalid'

const revoked = diagnostics.channel(AUTH_REVOKED_CHANNEL)
const failure = diagnostics.channel(AUTH_FAILURE_CHANNEL)

/** `{count}`: how many tokens were just revoked. */
export function publishRevoked(count: number): void {
  if (count > 0 && revoked.hasSubscribers) revoked.publish({ count })
}

/** `{reason}`: why a credential was refused. */
export function publishFailure(reason: AuthFailureReason): void {
  if (failure.hasSubscribers) failure.publish({ reason })
}
