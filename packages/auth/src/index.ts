// @trivium/auth — tokens, revocation stores, the authentication middleware and the credential flows.
// An explicit list of what applications use; helpers for tests and integrations are in
// `@trivium/auth/internal`, the SQL stores in `@trivium/auth/sql`.
import { triviumAuthPlugin } from './plugin.js'

export { type RefreshClaims, TokenClaims, type TokenSubject, type ValidationResult } from './claims.js'
export { AUTH_FAILURE_CHANNEL, AUTH_REVOKED_CHANNEL, type AuthFailureReason } from './diagnostics.js'
export { registerFlows } from './flow-endpoints.js'
export {
  type AuthFlows,
  createAuthFlows,
  EMAIL_TAKEN,
  type FlowsOptions,
  INVALID_CREDENTIALS,
  type RegisteredHook,
  type RegisterOptions,
  USER_GONE,
  USERNAME_TAKEN,
} from './flows.js'
export { type LedgerEntry, MemoryTokenLedger, type TokenLedger } from './ledger.js'
export {
  AUTHENTICATION_REQUIRED,
  type AuthMode,
  authenticateToken,
  createAuthMiddleware,
  identityOf,
  TOKEN_EXPIRED_MESSAGE,
  TOKEN_REVOKED,
} from './middleware.js'
export { triviumAuthPlugin as triviumAuth, triviumAuthPlugin } from './plugin.js'
export { type TriviumAuthFlowsOptions, type TriviumAuthOptions, WEAK_SECRET } from './plugin-options.js'
export {
  DEFAULT_REDIS_PREFIX,
  RedisRevocationStore,
  type RedisRevocationStoreOptions,
  type RevocationRedisClient,
  type RevocationRedisNode,
} from './redis-revocation.js'
export {
  type DurableRevocationStore,
  MemoryRevocationStore,
  type MemoryRevocationStoreOptions,
  type RevocationStore,
  STORE_UNAVAILABLE,
} from './revocation.js'
export { type TriviumRequestUser, type TriviumRouteRules, triviumUser } from './routes.js'
export {
  type AccessSubject,
  AuthService,
  type RevocationNotice,
  type RevokedListener,
  type RolesProvider,
  type TokenPair,
} from './service.js'
export {
  ACCESS_TOKEN_TTL_SECONDS,
  AUDIENCE,
  type Clock,
  MIN_SECRET_BYTES,
  REFRESH_TOKEN_TTL_SECONDS,
  TokenService,
  type TokenServiceOptions,
} from './tokens.js'
export {
  INVALID_TOTP,
  TOTP_ALREADY_ENABLED,
  TOTP_NOT_ENABLED,
  TOTP_NOT_STARTED,
  TOTP_REQUIRED,
} from './totp-flows.js'
export {
  type AuthTransaction,
  type AuthTransactionTypes,
  DuplicateUserError,
  type NewUser,
  type UserRecord,
  type UserStore,
} from './users.js'

export default triviumAuthPlugin
