// Issuing and validating tokens. Every verifier of the package is built here, once, pinned to HS256,
// the configured issuer, the audience `platform-api` and the required registered claims. Time checks
// (exp, nbf) are done by hand with the injectable clock, in the order of the README's "Tokens" table.
import { randomInt } from 'node:crypto'
import { createRequire } from 'node:module'
import { TOKEN_EXPIRED_MESSAGE } from '@trivium/core/internal'
import {
  ClaimError,
  parseAccessClaims,
  parseRefreshClaims,
  type RefreshValidationResult,
  type TokenSubject,
  type ValidationResult,
  type ValidationResultOf,
} from './claims.js'
import { SETUP } from './setup-errors.js'

export const AUDIENCE = 'platform-api'
export const ACCESS_TOKEN_TTL_SECONDS = 60 * 60
export const REFRESH_TOKEN_TTL_SECONDS = 7 * 24 * 60 * 60
/** Tokens longer than this are refused before any parsing. */
export const MAX_TOKEN_LENGTH = 8192
/** Minimum secret length (bytes) accepted when NODE_ENV=production. */
export const MIN_SECRET_BYTES = 32
export const DEFAULT_VERIFIED_CACHE_SIZE = 10_000

/** The spec's text, core's constant (its SSE and frame sessions end an expired call with it too). */
export const TOKEN_EXPIRED = TOKEN_EXPIRED_MESSAGE
export const MISSING_TOKEN_TYPE = 'Missing token type'
export const TOKEN_NOT_YET_VALID = 'Token not yet valid'

// fast-jwt (with asn1.js, bn.js and safe-regex2, ~35 CommonJS files) is loaded when the first
// TokenService is built, not when @trivium/auth is imported (bench/README.md, "Cold import").
let fastJwt: typeof import('fast-jwt') | undefined
function jwtLibrary(): typeof import('fast-jwt') {
  fastJwt ??= createRequire(import.meta.url)('fast-jwt') as typeof import('fast-jwt')
  return fastJwt
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/** Milliseconds since the Unix epoch. Injectable for tests. */
export type Clock = () => number

export interface TokenServiceOptions {
  /** The HS256 signing secret (<SIGNING_SECRET>). */
  secret: string | Buffer
  /** The configured issuer (`iss`). */
  issuer: string
  /** Default access-token lifetime in seconds (default 3600). */
  accessTokenTtlSeconds?: number
  /** Clock in ms since epoch (default Date.now). */
  clock?: Clock
  /** Entries of the verified-token cache (default 10 000; 0 disables it). */
  verifiedCacheSize?: number
  /** Treat as production: refuse secrets shorter than 32 bytes (default NODE_ENV === 'production'). */
  production?: boolean
}

export interface IssueAccessOptions {
  /** Custom lifetime in seconds (the documented optional override). */
  ttlSeconds?: number
}

/** A signed token with its id and expiry (seconds since epoch). */
export interface IssuedToken {
  token: string
  jti: string
  exp: number
}

/** Payload fields read from a token whose signature checked out (used by revocation). */
export interface VerifiedPayload {
  jti: string
  exp: number
  userId: number | undefined
  tokenType: string | undefined
}

/** Checks a signing secret; throws TypeError with an `@trivium/auth:` message. */
export function checkSecret(secret: unknown, production: boolean): Buffer {
  if (typeof secret !== 'string' && !Buffer.isBuffer(secret)) {
    throw SETUP.TRV_AUTH_SECRET_REQUIRED()
  }
  const bytes = Buffer.isBuffer(secret) ? secret : Buffer.from(secret, 'utf8')
  if (bytes.length === 0) throw SETUP.TRV_AUTH_SECRET_EMPTY()
  if (production && bytes.length < MIN_SECRET_BYTES) {
    throw SETUP.TRV_AUTH_SECRET_PRODUCTION(MIN_SECRET_BYTES)
  }
  return bytes
}

/** A token id: `<ms since epoch>_<8 random characters from a-z, A-Z, 0-9>` (unbiased, crypto.randomInt). */
export function generateJti(nowMs: number): string {
  let suffix = ''
  for (let i = 0; i < 8; i++) suffix += ALNUM[randomInt(ALNUM.length)]
  return `${nowMs}_${suffix}`
}

function checkTtl(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw SETUP.TRV_AUTH_TTL(name)
  }
  return value
}

function uniqueStrings(list: readonly string[] | undefined, name: string): string[] {
  if (list === undefined) return []
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
    throw new TypeError(`@trivium/auth: ${name} must be a list of strings`)
  }
  return [...new Set(list)]
}

type Payload = Record<string, unknown>

interface CacheEntry {
  /** The whole token: the cache key is only a fold of its end, so a hit is confirmed by comparing this. */
  token: string
  /** Where the token's signature starts (after its last dot): the part compared in constant time. */
  signatureStart: number
  result: ValidationResult
  exp: number
  nbf: number | undefined
}

/** What `run` found: the payload only with a valid token (the verified-token cache keys on its exp/nbf). */
type RunOutcome<C> =
  | { isValid: false; result: ValidationResultOf<C> }
  | { isValid: true; result: ValidationResultOf<C>; payload: Payload }

const invalid = (error: string): ValidationResultOf<never> => ({ isValid: false, isExpired: false, error })
const EXPIRED: ValidationResultOf<never> = Object.freeze({
  isValid: false,
  isExpired: true,
  error: TOKEN_EXPIRED,
})

/** Characters of the token's end folded into the cache key (the end of the HMAC signature). */
const CACHE_KEY_CHARS = 5

/**
 * The verified-token cache's key: the token's last five characters (part of its signature) folded into
 * a 30-bit integer. A small integer is hashed by the Map for free, where a string key, made fresh from
 * each request's header, would be sliced and hashed per request. Tokens that share a key share a slot;
 * the entry holds the whole token, so such a token is a cache miss, never a false hit. Undefined for
 * tokens too short to be valid (never cached).
 */
export function cacheKey(token: string): number | undefined {
  const length = token.length
  if (length < CACHE_KEY_CHARS) return undefined
  let key = 0
  for (let i = length - CACHE_KEY_CHARS; i < length; i++) key = (key * 61 + token.charCodeAt(i)) & 0x3fffffff
  return key
}

/**
 * Whether a request's token is the cached one. The signature (from `signatureStart`, after the last dot)
 * is the credential: it is compared in time that depends only on its length, so an attacker cannot learn
 * it a character at a time. Only when it matches in full is the rest compared natively (an early exit
 * there can only tell what a holder of the signature already knows).
 */
export function sameToken(cached: string, token: string, signatureStart: number): boolean {
  const length = cached.length
  if (token.length !== length) return false
  let diff = 0
  for (let i = signatureStart; i < length; i++) diff |= cached.charCodeAt(i) ^ token.charCodeAt(i)
  return diff === 0 && cached === token
}

function libraryMessage(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (err instanceof Error && typeof code === 'string' && code.startsWith('FAST_JWT_')) return err.message
  return `Token validation failed: ${err instanceof Error ? err.message : String(err)}`
}

export class TokenService {
  readonly issuer: string
  readonly accessTokenTtlSeconds: number
  readonly refreshTokenTtlSeconds = REFRESH_TOKEN_TTL_SECONDS
  readonly clock: Clock
  private readonly sign: (payload: Payload) => string
  private readonly verify: (token: string) => Payload
  private readonly cache = new Map<number, CacheEntry>()
  private readonly cacheSize: number

  /** Entries of the verified-token cache (`verifiedCacheSize`; 0: every token is verified every time). */
  get verifiedCacheSize(): number {
    return this.cacheSize
  }

  constructor(options: TokenServiceOptions) {
    if (typeof options !== 'object' || options === null) throw SETUP.TRV_AUTH_OPTIONS()
    const production = options.production ?? process.env.NODE_ENV === 'production'
    const key = checkSecret(options.secret, production)
    if (typeof options.issuer !== 'string' || options.issuer.length === 0) {
      throw SETUP.TRV_AUTH_ISSUER()
    }
    this.issuer = options.issuer
    this.accessTokenTtlSeconds = checkTtl(
      options.accessTokenTtlSeconds ?? ACCESS_TOKEN_TTL_SECONDS,
      'accessTokenTtlSeconds',
    )
    this.clock = options.clock ?? Date.now
    if (typeof this.clock !== 'function') throw SETUP.TRV_AUTH_CLOCK()
    const size = options.verifiedCacheSize ?? DEFAULT_VERIFIED_CACHE_SIZE
    if (!Number.isSafeInteger(size) || size < 0) {
      throw SETUP.TRV_AUTH_VERIFIED_CACHE_SIZE()
    }
    this.cacheSize = size
    // iat, exp and nbf are set explicitly in every payload; the library keeps the given values.
    const { createSigner, createVerifier } = jwtLibrary()
    this.sign = createSigner({ key, algorithm: 'HS256' })
    // THE verifier. Signature, algorithm, issuer, audience and presence of the registered claims are
    // the library's job; exp and nbf are checked by hand afterwards, with the injectable clock and the
    // documented order and boundary (README "Tokens"; now >= exp is expired; the library would still accept now == exp).
    this.verify = createVerifier({
      key,
      algorithms: ['HS256'],
      allowedIss: [this.issuer],
      allowedAud: [AUDIENCE],
      requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti'],
      ignoreExpiration: true,
      ignoreNotBefore: true,
      clockTolerance: 0,
      cache: false,
    }) as (token: string) => Payload
  }

  private nowMs(): number {
    return this.clock()
  }

  /** Signs an access token with exactly the documented claims. */
  issueAccessToken(subject: TokenSubject, options: IssueAccessOptions = {}): string {
    return this.signAccessToken(subject, options).token
  }

  /** Signs a refresh token: iss, sub, aud, exp (7 days), iat, jti, user_id, token_type `refresh`. */
  issueRefreshToken(userId: number): string {
    return this.signRefreshToken(userId).token
  }

  /** Like issueAccessToken, also returning the jti and exp. */
  signAccessToken(subject: TokenSubject, options: IssueAccessOptions = {}): IssuedToken {
    if (typeof subject !== 'object' || subject === null)
      throw new TypeError('@trivium/auth: subject is required')
    if (!Number.isSafeInteger(subject.userId)) throw new TypeError('@trivium/auth: userId must be an integer')
    if (typeof subject.username !== 'string') throw new TypeError('@trivium/auth: username must be a string')
    if (typeof subject.email !== 'string') throw new TypeError('@trivium/auth: email must be a string')
    const ttl =
      options.ttlSeconds === undefined
        ? this.accessTokenTtlSeconds
        : checkTtl(options.ttlSeconds, 'ttlSeconds')
    const nowMs = this.nowMs()
    const iat = Math.floor(nowMs / 1000)
    const jti = generateJti(nowMs)
    const exp = iat + ttl
    const token = this.sign({
      iss: this.issuer,
      sub: String(subject.userId),
      aud: AUDIENCE,
      exp,
      iat,
      nbf: iat,
      jti,
      user_id: subject.userId,
      username: subject.username,
      email: subject.email,
      roles: uniqueStrings(subject.roles, 'roles'),
      permissions: uniqueStrings(subject.permissions, 'permissions'),
      token_type: 'access',
    })
    return { token, jti, exp }
  }

  /** Like issueRefreshToken, also returning the jti and exp. */
  signRefreshToken(userId: number): IssuedToken {
    if (!Number.isSafeInteger(userId)) throw new TypeError('@trivium/auth: userId must be an integer')
    const nowMs = this.nowMs()
    const iat = Math.floor(nowMs / 1000)
    const jti = generateJti(nowMs)
    const exp = iat + REFRESH_TOKEN_TTL_SECONDS
    const token = this.sign({
      iss: this.issuer,
      sub: String(userId),
      aud: AUDIENCE,
      exp,
      iat,
      jti,
      user_id: userId,
      token_type: 'refresh',
    })
    return { token, jti, exp }
  }

  /**
   * The documented validation, in its order: signature/format (library message), `Missing token type`,
   * expiry, `Token not yet valid`, then claim parsing (`Token validation failed: <reason>`).
   * Never throws. Revocation is not checked here (see the middleware / AuthService.authenticate).
   */
  validate(token: unknown): ValidationResult {
    const text = this.cacheSize > 0 && typeof token === 'string' ? token : undefined
    const key = text === undefined ? undefined : cacheKey(text)
    if (key !== undefined && text !== undefined) {
      const hit = this.cache.get(key)
      if (hit !== undefined && sameToken(hit.token, text, hit.signatureStart)) {
        const now = Math.floor(this.clock() / 1000)
        if (now < hit.exp && (hit.nbf === undefined || now >= hit.nbf)) return hit.result
        this.cache.delete(key)
      }
    }
    const outcome = this.run(token, parseAccessClaims)
    if (outcome.isValid && key !== undefined && text !== undefined) {
      const payload = outcome.payload
      if (this.cache.size >= this.cacheSize && !this.cache.has(key)) {
        const oldest = this.cache.keys().next().value
        if (oldest !== undefined) this.cache.delete(oldest)
      }
      this.cache.set(key, {
        token: text,
        signatureStart: text.lastIndexOf('.') + 1,
        result: outcome.result,
        exp: payload.exp as number,
        nbf: typeof payload.nbf === 'number' ? payload.nbf : undefined,
      })
    }
    return outcome.result
  }

  /** Same steps as `validate`, for a refresh token (token_type must be `refresh`). */
  validateRefresh(token: unknown): RefreshValidationResult {
    return this.run(token, parseRefreshClaims).result
  }

  /**
   * Checks signature, algorithm, issuer, audience and required claims, ignoring time. Throws the
   * library's error. Used to revoke a token (which may already be expired).
   */
  verifySignature(token: unknown): VerifiedPayload {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH)
      throw new ClaimError('The token is malformed.')
    const payload = this.verify(token)
    if (typeof payload.jti !== 'string' || payload.jti.length === 0)
      throw new ClaimError('claim jti must be a string')
    if (typeof payload.exp !== 'number') throw new ClaimError('The exp claim must be a number.')
    return {
      jti: payload.jti,
      exp: payload.exp,
      userId: typeof payload.user_id === 'number' ? payload.user_id : undefined,
      tokenType: typeof payload.token_type === 'string' ? payload.token_type : undefined,
    }
  }

  /** Drops a token from the verified-token cache. */
  forget(token: string): void {
    if (typeof token !== 'string') return
    const key = cacheKey(token)
    if (key !== undefined && this.cache.get(key)?.token === token) this.cache.delete(key)
  }

  /** Empties the verified-token cache. */
  clearCache(): void {
    this.cache.clear()
  }

  private run<C>(token: unknown, parse: (payload: Payload) => C): RunOutcome<C> {
    // 1. signature / format (the library), including what the library itself would call expired.
    if (typeof token === 'string' && token.length > MAX_TOKEN_LENGTH) {
      return { isValid: false, result: invalid('The token is malformed.') }
    }
    let payload: Payload
    try {
      payload = this.verify(token as string)
    } catch (err) {
      return { isValid: false, result: invalid(libraryMessage(err)) }
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      return { isValid: false, result: invalid('The token payload must be an object.') }
    }
    const exp = payload.exp
    const nbf = payload.nbf
    // The library's own claim-type checks for the two date claims it was told to skip.
    if (typeof exp !== 'number' || Number.isNaN(exp)) {
      return { isValid: false, result: invalid('The exp claim must be a number.') }
    }
    if (nbf !== undefined && (typeof nbf !== 'number' || Number.isNaN(nbf))) {
      return { isValid: false, result: invalid('The nbf claim must be a number.') }
    }
    const nowMs = this.nowMs()
    if (nowMs > exp * 1000) return { isValid: false, result: EXPIRED } // what fast-jwt reports as expired
    // 2. token_type
    if (payload.token_type === undefined || payload.token_type === null) {
      return { isValid: false, result: invalid(MISSING_TOKEN_TYPE) }
    }
    // 3. expiry, in whole seconds: now >= exp
    const now = Math.floor(nowMs / 1000)
    if (now >= exp) return { isValid: false, result: EXPIRED }
    // 4. not before
    if (nbf !== undefined && now < nbf) return { isValid: false, result: invalid(TOKEN_NOT_YET_VALID) }
    // 5. anything else, including parsing the claims
    let claims: C
    try {
      claims = parse(payload)
    } catch (err) {
      const reason = err instanceof ClaimError ? err.message : 'unexpected error'
      return { isValid: false, result: invalid(`Token validation failed: ${reason}`) }
    }
    return {
      isValid: true,
      result: Object.freeze({ isValid: true, isExpired: false, claims }),
      payload,
    }
  }
}
