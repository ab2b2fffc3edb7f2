// `@trivium/auth/internal`: building blocks for tests and integrations; not a stable API.
export { ClaimError, parseAccessClaims, parseRefreshClaims } from './claims.js'
export { DUMMY_HASH } from './flows-context.js'
export { setUserContext } from './middleware.js'
export { checkJti, checkTtl } from './revocation.js'
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
