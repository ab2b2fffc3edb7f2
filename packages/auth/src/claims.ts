// The documented parsed claims (TokenClaims) and validation result.

/** Parsed claims of a valid access token, held in the request context as `token_claims`. */
export class TokenClaims {
  readonly userId: number
  readonly username: string
  readonly email: string
  readonly roles: readonly string[]
  readonly permissions: readonly string[]
  readonly tokenType: string
  /** `iat` in ms since the epoch, fixed at verification. */
  readonly issuedAtMs: number
  /** `exp` in ms since the epoch, fixed at verification: what every expiry decision reads. */
  readonly expiresAtMs: number
  readonly jti: string

  constructor(init: {
    userId: number
    username: string
    email: string
    roles: readonly string[]
    permissions: readonly string[]
    tokenType: string
    issuedAt: Date
    expiresAt: Date
    jti: string
  }) {
    this.userId = init.userId
    this.username = init.username
    this.email = init.email
    this.roles = Object.freeze([...init.roles])
    this.permissions = Object.freeze([...init.permissions])
    this.tokenType = init.tokenType
    this.issuedAtMs = init.issuedAt.getTime()
    this.expiresAtMs = init.expiresAt.getTime()
    this.jti = init.jti
    Object.freeze(this)
  }

  // A Date is mutable even inside a frozen object, and claims are shared (verified-token cache, every
  // call of a connection): each read gets a Date of its own, so no handler can move the expiry.
  /** When the token was issued (`iat`); a new Date on every read. */
  get issuedAt(): Date {
    return new Date(this.issuedAtMs)
  }

  /** When the token expires (`exp`); a new Date on every read. */
  get expiresAt(): Date {
    return new Date(this.expiresAtMs)
  }

  /** True when `permission` is in permissions. */
  hasPermission(permission: string): boolean {
    return this.permissions.includes(permission)
  }

  /** True when `role` is in roles. */
  hasRole(role: string): boolean {
    return this.roles.includes(role)
  }

  /** True when at least one listed role is held. */
  hasAnyRole(roles: readonly string[]): boolean {
    return roles.some((r) => this.roles.includes(r))
  }

  /** True when every listed role is held. */
  hasAllRoles(roles: readonly string[]): boolean {
    return roles.every((r) => this.roles.includes(r))
  }
}

/** A validation result whose claims are of type C. */
export interface ValidationResultOf<C> {
  /** True only for a good token. */
  isValid: boolean
  /** True only when the token is expired. */
  isExpired: boolean
  /** Reason; `Token has expired` for expiry. */
  error?: string
  /** Present only when valid. */
  claims?: C
}

/** The documented validation result. `claims` is present only when `isValid`. */
export type ValidationResult = ValidationResultOf<TokenClaims>

/** Claims of a valid refresh token (the documented smaller claim set). */
export interface RefreshClaims {
  readonly userId: number
  readonly jti: string
  /** `iat` / `exp` in ms since the epoch, fixed at verification. */
  readonly issuedAtMs: number
  readonly expiresAtMs: number
  /** New Dates on every read (see TokenClaims). */
  readonly issuedAt: Date
  readonly expiresAt: Date
}

/** The result of validating a refresh token: same shape as ValidationResult. */
export type RefreshValidationResult = ValidationResultOf<RefreshClaims>

/** What an access token is issued for. */
export interface TokenSubject {
  userId: number
  username: string
  email: string
  roles?: readonly string[]
  permissions?: readonly string[]
}

export class ClaimError extends Error {}

type Payload = Record<string, unknown>

function need(payload: Payload, name: string): unknown {
  if (!(name in payload) || payload[name] === undefined || payload[name] === null) {
    throw new ClaimError(`claim ${name} is missing`)
  }
  return payload[name]
}

function needString(payload: Payload, name: string): string {
  const v = need(payload, name)
  if (typeof v !== 'string') throw new ClaimError(`claim ${name} must be a string`)
  return v
}

function needSeconds(payload: Payload, name: string): number {
  const v = need(payload, name)
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new ClaimError(`claim ${name} must be an integer number of seconds`)
  }
  return v
}

function needUserId(payload: Payload): number {
  const v = need(payload, 'user_id')
  if (typeof v !== 'number' || !Number.isSafeInteger(v))
    throw new ClaimError('claim user_id must be an integer')
  if (payload.sub !== String(v)) throw new ClaimError('claim sub does not match user_id')
  return v
}

function needStrings(payload: Payload, name: string): string[] {
  const v = need(payload, name)
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
    throw new ClaimError(`claim ${name} must be a list of strings`)
  }
  return v
}

/** Parses an access-token payload into TokenClaims; throws ClaimError naming the first bad claim. */
export function parseAccessClaims(payload: Payload): TokenClaims {
  // The documented list first (username, email, roles, permissions, token_type, iat, exp, jti), then user_id.
  const username = needString(payload, 'username')
  const email = needString(payload, 'email')
  const roles = needStrings(payload, 'roles')
  const permissions = needStrings(payload, 'permissions')
  const tokenType = needString(payload, 'token_type')
  const iat = needSeconds(payload, 'iat')
  const exp = needSeconds(payload, 'exp')
  const jti = needString(payload, 'jti')
  const userId = needUserId(payload)
  return new TokenClaims({
    userId,
    username,
    email,
    roles,
    permissions,
    tokenType,
    issuedAt: new Date(iat * 1000),
    expiresAt: new Date(exp * 1000),
    jti,
  })
}

/** Parses a refresh-token payload; token_type must be `refresh`. */
export function parseRefreshClaims(payload: Payload): RefreshClaims {
  const tokenType = needString(payload, 'token_type')
  if (tokenType !== 'refresh') throw new ClaimError('not a refresh token')
  const iat = needSeconds(payload, 'iat')
  const exp = needSeconds(payload, 'exp')
  const jti = needString(payload, 'jti')
  const userId = needUserId(payload)
  return Object.freeze({
    userId,
    jti,
    issuedAtMs: iat * 1000,
    expiresAtMs: exp * 1000,
    get issuedAt() {
      return new Date(iat * 1000)
    },
    get expiresAt() {
      return new Date(exp * 1000)
    },
  })
}
