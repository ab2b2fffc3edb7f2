// The credential flows as plain functions (README "Credential flows"): account (register, me),
// session (login, refresh, logout) and TOTP, over one shared context. flow-endpoints.ts registers them
// as core endpoints.
import { createAccountFlows } from './account-flows.js'
import { type FlowsOptions, flowsContext } from './flows-context.js'
import type { AuthService } from './service.js'
import { createSessionFlows } from './session-flows.js'
import { createTotpFlows } from './totp-flows.js'

export { EMAIL_TAKEN, USERNAME_TAKEN } from './account-flows.js'
export {
  type FlowsOptions,
  type RegisteredHook,
  type RegisterOptions,
  USER_GONE,
} from './flows-context.js'
export { INVALID_CREDENTIALS } from './session-flows.js'

/**
 * The credential flows as plain functions (register, login, refresh, logout, me, TOTP). Use them to
 * serve the flows under your own models and routes; `registerFlows` registers them on core as is.
 */
export function createAuthFlows(auth: AuthService, options: FlowsOptions) {
  const ctx = flowsContext(auth, options)
  return {
    ...createAccountFlows(ctx),
    ...createSessionFlows(ctx),
    ...createTotpFlows(ctx),
    /** Resolves at once (kept for callers that wait for it: the timing-safe dummy hash is now a constant). */
    ready: Promise.resolve(),
  }
}

export type AuthFlows = ReturnType<typeof createAuthFlows>
