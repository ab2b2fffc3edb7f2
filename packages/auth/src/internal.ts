// `@trivium/auth/internal`: building blocks for tests and integrations; not a stable API.
export { ClaimError, parseAccessClaims, parseRefreshClaims } from './claims.js'
export { setUserContext } from './middleware.js'
export { checkJti, checkTtl } from './revocation.js'
export { DUMMY_HASH } from './session-flows.js'
export {
  cacheKey,
  checkSecret,
  generateJti,
  type IssuedToken,
  MAX_TOKEN_LENGTH,
  sameToken,
  type VerifiedPayload,
} from './tokens.js'
export { acceptTotp } from './totp-flows.js'
